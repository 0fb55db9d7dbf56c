// client.mjs: an MCP client built on the official TypeScript SDK, for contextd's
// e2e suite. It spawns a stdio MCP server, initializes, and then runs requests,
// printing one JSON line per answer on stdout.
//
//   node client.mjs [--call JSON]... -- COMMAND [ARGS...]
//
// First line printed: {"server": {name, version}, "instructions": ...,
// "capabilities": ...}. Then every request given with --call, in order, then
// every request read from stdin (one JSON object per line) until stdin ends.
// A request is one of
//   {"op": "list"}                                     tools/list
//   {"op": "call", "name": N, "arguments": A}           tools/call
//   {"op": "raw", "method": M, "params": P}            any request, sent as is
// and its answer {"tools": [...]}, {"result": {...}} or, when the server
// answered with a JSON-RPC error, {"error": {"code": C, "message": M}}.
// The server gets this process's whole environment and working directory, as
// an agent passes them to a server it was configured to start.
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError, ResultSchema } from '@modelcontextprotocol/sdk/types.js';

function usage(msg) {
  process.stderr.write(`client.mjs: ${msg}\nusage: node client.mjs [--call JSON]... -- COMMAND [ARGS...]\n`);
  process.exit(2);
}

const argv = process.argv.slice(2);
const calls = [];
let i = 0;
for (; i < argv.length && argv[i] !== '--'; i++) {
  if (argv[i] !== '--call' || i + 1 >= argv.length) usage(`unexpected argument ${argv[i]}`);
  try {
    calls.push(JSON.parse(argv[++i]));
  } catch (e) {
    usage(`--call: ${e.message}`);
  }
}
const server = argv.slice(i + 1);
if (server.length === 0) usage('no server command after --');

const out = (v) => process.stdout.write(JSON.stringify(v) + '\n');

const transport = new StdioClientTransport({
  command: server[0],
  args: server.slice(1),
  env: { ...process.env },
  stderr: 'inherit',
});
const client = new Client({ name: 'contextd-e2e', version: '1.0.0' });

async function answer(req) {
  try {
    switch (req.op) {
      case 'list':
        return { tools: (await client.listTools()).tools };
      case 'call':
        return { result: await client.callTool({ name: req.name, arguments: req.arguments }) };
      case 'raw':
        return { result: await client.request({ method: req.method, params: req.params }, ResultSchema) };
      default:
        return { error: { code: 0, message: `client.mjs: unknown op ${JSON.stringify(req.op)}` } };
    }
  } catch (e) {
    if (e instanceof McpError) return { error: { code: e.code, message: e.message } };
    throw e;
  }
}

try {
  await client.connect(transport);
  out({
    server: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    instructions: client.getInstructions(),
  });
  for (const req of calls) out(await answer(req));
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === '') continue;
    out(await answer(JSON.parse(line)));
  }
  await client.close();
} catch (e) {
  process.stderr.write(`client.mjs: ${e.stack || e}\n`);
  process.exit(1);
}
