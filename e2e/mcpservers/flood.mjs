// flood.mjs: a small stdio MCP server (official TypeScript SDK) for contextd's
// e2e test of the firewall's budget on every message a server sends. It floods
// through each way that is not a tools/call result: a text resource and a
// binary one, a prompt, a completion, log notifications and a sampling request
// of its own, each LINES lines long ("flood line N ..."), beside small ones
// that must pass.
//
//   node flood.mjs LINES
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { z } from 'zod';

const lines = Number(process.argv[2]);
if (!Number.isInteger(lines) || lines < 1) {
  process.stderr.write('usage: node flood.mjs LINES\n');
  process.exit(2);
}
const flood = Array.from({ length: lines }, (_, i) => `flood line ${i} of a server that ignores budgets\n`).join('');

const server = new McpServer({ name: 'contextd-e2e-flood', version: '1.0.0' }, { capabilities: { logging: {} } });

server.registerResource('log', 'flood://log', { mimeType: 'text/plain' },
  async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: flood }] }));
server.registerResource('blob', 'flood://blob', { mimeType: 'application/octet-stream' },
  async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'application/octet-stream', blob: Buffer.from(flood).toString('base64') }] }));
server.registerResource('small', 'flood://small', { mimeType: 'text/plain' },
  async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'a small resource' }] }));
server.registerResource('item', new ResourceTemplate('flood://item/{name}', {
  list: undefined,
  complete: { name: async () => [flood] },
}), {}, async (uri) => ({ contents: [{ uri: uri.href, text: 'item' }] }));

server.registerPrompt('flood', { description: 'A prompt as long as the flood.' },
  async () => ({ messages: [{ role: 'user', content: { type: 'text', text: flood } }] }));
server.registerPrompt('small', { description: 'A short prompt.', argsSchema: { topic: completable(z.string(), async () => ['budgets']) } },
  async ({ topic }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `a short prompt about ${topic}` } }] }));

// chatter logs a small line and the flood, then asks the client to sample
// the flood, and says what became of that request.
server.registerTool('chatter', { description: 'Logs, and asks the client to sample.', inputSchema: {} }, async () => {
  await server.server.sendLoggingMessage({ level: 'info', data: 'chatter: a small line' });
  await server.server.sendLoggingMessage({ level: 'info', data: flood });
  let sampling;
  try {
    const r = await server.server.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: flood } }], maxTokens: 10 });
    sampling = `answered: ${r.content.type === 'text' ? r.content.text.slice(0, 40) : r.content.type}`;
  } catch (e) {
    sampling = `refused: ${e.message}`;
  }
  return { content: [{ type: 'text', text: `sampling ${sampling}` }] };
});

await server.connect(new StdioServerTransport());
