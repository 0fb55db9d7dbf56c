// agent.mjs: one process that is the MCP client of two servers at once, as an
// agent (Claude Code) is of every server it is configured with: contextd's own
// MCP face and a third-party server wrapped by contextd. Both proxies are
// children of this process, so the daemon derives the same session for both.
//
//   node agent.mjs MESSAGE_LINES -- WRAPPED_SERVER_COMMAND [ARGS...]
//
// It calls the wrapped server's echo tool with MESSAGE_LINES numbered lines,
// takes the MCP reference from the line that says what was cut, and pages
// through the rest with contextd's continue tool. It prints one JSON line:
// {"echo": text the wrap returned, "pages": [text of each page...],
//  "error": message if a call failed}.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const argv = process.argv.slice(2);
const sep = argv.indexOf('--');
if (sep !== 1 || argv.length < 3) {
  process.stderr.write('usage: node agent.mjs MESSAGE_LINES -- WRAPPED_SERVER_COMMAND [ARGS...]\n');
  process.exit(2);
}
const lines = Number(argv[0]);
const wrapped = argv.slice(2);
const proxy = process.env.CONTEXTD_PROXY;

async function connect(name, args) {
  const client = new Client({ name: `contextd-e2e-agent-${name}`, version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: proxy, args, env: { ...process.env }, stderr: 'inherit' }));
  return client;
}

const text = (result) => (result.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');
const report = { pages: [] };
try {
  const face = await connect('face', ['mcp']);
  const wrap = await connect('wrap', ['mcp', 'wrap', '--name', 'everything', '--', ...wrapped]);
  const message = Array.from({ length: lines }, (_, i) => `line ${i} of a long message`).join('\n');
  report.echo = text(await wrap.callTool({ name: 'echo', arguments: { message } }));
  const ref = /\{"ref":"([^"]+)"\}/.exec(report.echo);
  for (let next = ref && ref[1], n = 0; next && n < 200; n++) {
    const page = await face.callTool({ name: 'continue', arguments: { ref: next } });
    let body = text(page);
    if (page.isError) throw new Error(`continue: ${body}`);
    // The line contextd adds after a page that has a next one (pages end
    // on whole lines, so no newline was added before it).
    const more = /\[truncated: call continue with \{"ref":"([^"]+)"\} for the next part\]\n$/.exec(body);
    next = more ? more[1] : '';
    if (more) body = body.slice(0, more.index);
    report.pages.push(body);
  }
  await wrap.close();
  await face.close();
} catch (e) {
  report.error = String(e && e.message || e);
}
// A pipe's write is asynchronous: exit once the report is out.
process.stdout.write(JSON.stringify(report) + '\n', () => process.exit(0));
