// pinned.mjs: a small stdio MCP server (official TypeScript SDK, McpServer) for
// contextd's e2e test of description pinning. Its tool "greet" takes its
// description from the file named by the first argument, read at start-up, so
// the test can change what the server says about the tool between two runs
// (a "rug pull"); "steady" never changes.
//
//   node pinned.mjs DESCRIPTION_FILE
import { readFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

if (process.argv.length !== 3) {
  process.stderr.write('usage: node pinned.mjs DESCRIPTION_FILE\n');
  process.exit(2);
}
const description = readFileSync(process.argv[2], 'utf8').trim();

const server = new McpServer({ name: 'contextd-e2e-pinned', version: '1.0.0' });
server.registerTool('greet', { description, inputSchema: { name: z.string() } },
  async ({ name }) => ({ content: [{ type: 'text', text: `hello ${name}` }] }));
server.registerTool('steady', { description: 'Says steady; its description never changes.', inputSchema: {} },
  async () => ({ content: [{ type: 'text', text: 'steady' }] }));
await server.connect(new StdioServerTransport());
