// wrapclient.mjs: an MCP client on the official TypeScript SDK for the e2e tests
// of `contextd-proxy mcp wrap`. Unlike client.mjs it declares every client
// capability a server may use (roots, sampling, form and URL elicitation, and
// tasks for sampling and elicitation) and answers those server-to-client
// requests itself, and it runs its requests concurrently.
//
//   node wrapclient.mjs -- COMMAND [ARGS...]
//
// First line printed: {"server": {name, version}, "capabilities": ..., "instructions": ...}.
// Then it reads one JSON request per line from stdin and starts each at once,
// without waiting for the ones before; every answer is one JSON line that
// carries the request's "tag". Requests:
//   {"op": "list"}                                        tools/list, all pages: {"tools": [...]}
//   {"op": "call", "name": N, "arguments": A,
//    "progress": true}                                    tools/call: {"result": ..., "progress": [...]}
//   {"op": "task", "name": N, "arguments": A}             tools/call as a task: {"result": ..., "statuses": [...]}
//   {"op": "raw", "method": M, "params": P}               any request: {"result": ...}
//   {"op": "stats"}                                       what the server sent: {"stats": {...}}
//   {"op": "roots-changed"}                               notifications/roots/list_changed: {"sent": true}
//   {"op": "sleep", "ms": N}                              {"slept": N}
// A JSON-RPC error answer is {"error": {"code", "message"}}; a failure of the
// client itself (a result that breaks the tool's output schema) is
// {"fail": message}. Every answer has "ms", the time from start to answer.
// When stdin ends it waits for what is running, closes, and exits.
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, McpError, ResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';

const argv = process.argv.slice(2);
if (argv[0] !== '--' || argv.length < 2) {
  process.stderr.write('usage: node wrapclient.mjs -- COMMAND [ARGS...]\n');
  process.exit(2);
}
const out = (v) => process.stdout.write(JSON.stringify(v) + '\n');

const stats = { requests: {}, notifications: {} };
const count = (kind, method) => { stats[kind][method] = (stats[kind][method] || 0) + 1; };

const taskStore = new InMemoryTaskStore();
const client = new Client({ name: 'contextd-e2e-wrap', version: '1.0.0' }, {
  capabilities: {
    roots: { listChanged: true },
    sampling: {},
    elicitation: { form: {}, url: {} },
    tasks: { list: {}, cancel: {}, requests: { sampling: { createMessage: {} }, elicitation: { create: {} } } },
  },
  taskStore,
});
client.fallbackNotificationHandler = async (n) => count('notifications', n.method);

// A server-to-client request that asks for a task gets one: its result is
// stored a moment later, and the server fetches it with tasks/get and
// tasks/result, which the SDK answers from the store.
async function maybeTask(request, extra, result) {
  if (!request.params.task) return result;
  const task = await extra.taskStore.createTask({ ttl: request.params.task.ttl ?? 60000 });
  setTimeout(() => extra.taskStore.storeTaskResult(task.taskId, 'completed', result).catch(() => {}), 200);
  return { task };
}

client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
  count('requests', request.method);
  const first = request.params.messages[0]?.content;
  const text = first && first.type === 'text' ? first.text : '';
  return maybeTask(request, extra, {
    role: 'assistant', model: 'contextd-e2e-model', stopReason: 'endTurn',
    content: { type: 'text', text: `sampled: ${text}` },
  });
});

client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
  count('requests', request.method);
  const p = request.params;
  if (p.mode === 'url') return maybeTask(request, extra, { action: 'accept' });
  return maybeTask(request, extra, { action: 'accept', content: fill(p.requestedSchema) });
});

client.setRequestHandler(ListRootsRequestSchema, async (request) => {
  count('requests', request.method);
  return { roots: [{ uri: `file://${process.cwd()}`, name: 'project' }] };
});

// fill answers a form elicitation with a valid value for every field: its
// default, else the first choice, else a value of its type and format.
function fill(schema) {
  const content = {};
  for (const [key, f] of Object.entries(schema?.properties ?? {})) {
    if (f.default !== undefined) content[key] = f.default;
    else if (f.enum) content[key] = f.enum[0];
    else if (f.oneOf) content[key] = f.oneOf[0].const;
    else if (f.anyOf) content[key] = f.anyOf[0].const;
    else if (f.type === 'boolean') content[key] = true;
    else if (f.type === 'integer' || f.type === 'number') content[key] = f.minimum ?? 1;
    else if (f.type === 'array') {
      const items = f.items ?? {};
      content[key] = [items.enum?.[0] ?? items.anyOf?.[0]?.const ?? items.oneOf?.[0]?.const ?? 'x'];
    } else if (f.format === 'email') content[key] = 'e2e@example.com';
    else if (f.format === 'uri') content[key] = 'https://example.com/e2e';
    else if (f.format === 'date') content[key] = '2000-01-02';
    else if (f.format === 'date-time') content[key] = '2000-01-02T03:04:05Z';
    else content[key] = 'contextd e2e';
  }
  return content;
}

const long = { timeout: 180000, resetTimeoutOnProgress: true };

async function run(req) {
  switch (req.op) {
    case 'list': {
      const tools = [];
      let cursor;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined);
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      return { tools };
    }
    case 'call': {
      const progress = [];
      const opts = { ...long };
      if (req.progress) opts.onprogress = (p) => progress.push({ ...p, at: Date.now() });
      const result = await client.callTool({ name: req.name, arguments: req.arguments ?? {} }, undefined, opts);
      return { result, progress };
    }
    case 'task': {
      const statuses = [];
      let result;
      const opts = { ...long, task: { ttl: 60000 } };
      for await (const m of client.experimental.tasks.callToolStream({ name: req.name, arguments: req.arguments ?? {} }, undefined, opts)) {
        if (m.type === 'taskCreated' || m.type === 'taskStatus') statuses.push(m.task.status);
        else if (m.type === 'result') result = m.result;
        else if (m.type === 'error') throw m.error;
      }
      return { result, statuses };
    }
    case 'raw':
      return { result: await client.request({ method: req.method, params: req.params }, ResultSchema, long) };
    case 'stats':
      return { stats };
    case 'roots-changed':
      await client.sendRootsListChanged();
      return { sent: true };
    case 'sleep':
      await new Promise((r) => setTimeout(r, req.ms));
      return { slept: req.ms };
    default:
      return { fail: `wrapclient.mjs: unknown op ${JSON.stringify(req.op)}` };
  }
}

async function answer(line) {
  const start = Date.now();
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    out({ fail: `wrapclient.mjs: not JSON: ${e.message}` });
    return;
  }
  let a;
  try {
    a = await run(req);
  } catch (e) {
    a = e instanceof McpError ? { error: { code: e.code, message: e.message } } : { fail: String(e && e.message || e) };
  }
  out({ tag: req.tag, ...a, ms: Date.now() - start });
}

try {
  await client.connect(new StdioClientTransport({
    command: argv[1], args: argv.slice(2), env: { ...process.env }, stderr: 'inherit',
  }));
  out({ server: client.getServerVersion(), capabilities: client.getServerCapabilities(), instructions: client.getInstructions() });
  const running = new Set();
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === '') continue;
    const p = answer(line);
    running.add(p);
    p.finally(() => running.delete(p));
  }
  await Promise.all(running);
  await client.close();
  // The task store keeps a timer per task for its time to live (minutes);
  // nothing is left to serve.
  taskStore.cleanup();
  process.exit(0);
} catch (e) {
  process.stderr.write(`wrapclient.mjs: ${e.stack || e}\n`);
  process.exit(1);
}
