// Freezes the tools/list answer of each server in servers.json into
// ../testdata/<set>/<name>.json, where set is the entry's "set" (default
// servers): the second set widens the catalogue the second query file is
// judged over, without changing the first. Run after `npm ci` in this
// directory; the lock file pins every transitive version, which shapes the
// schemas. TOOLBENCH_OUT sends every file to one directory instead, to
// compare a fresh capture with the committed one.
//
// Usage: node capture.mjs [name ...]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outDirOf = (s) => process.env.TOOLBENCH_OUT ?? join(here, '..', 'testdata', s.set ?? 'servers');
const servers = JSON.parse(readFileSync(join(here, 'servers.json'), 'utf8'));
const only = process.argv.slice(2);

// A kubeconfig that parses but points nowhere: the kubernetes server reads it
// at start and lists its tools without contacting the cluster.
const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {token: dummy}}]
`;

function entryOf(pkg) {
  const dir = join(here, 'node_modules', pkg);
  const meta = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const bin = typeof meta.bin === 'string' ? meta.bin : Object.values(meta.bin)[0];
  return { path: join(dir, bin), version: meta.version };
}

// list speaks raw JSON-RPC over stdio so nothing between the server and the
// file can reshape the tools: initialize, initialized, then tools/list pages.
function list(cmd, args, env) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
    const timer = setTimeout(() => { p.kill(); reject(new Error('timed out')); }, 120000);
    const send = (m) => p.stdin.write(JSON.stringify(m) + '\n');
    const out = { tools: [] };
    let buf = '';
    let next = 2;
    p.on('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}`)); });
    p.stdout.on('data', (d) => {
      buf += d;
      for (let i; (i = buf.indexOf('\n')) >= 0;) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        let m;
        try { m = JSON.parse(line); } catch { continue; }
        if (m.error) { p.kill(); reject(new Error(JSON.stringify(m.error))); return; }
        if (m.id === 1) {
          out.protocolVersion = m.result.protocolVersion;
          out.serverInfo = m.result.serverInfo;
          send({ jsonrpc: '2.0', method: 'notifications/initialized' });
          send({ jsonrpc: '2.0', id: next, method: 'tools/list', params: {} });
        } else if (m.id === next) {
          out.tools.push(...m.result.tools);
          if (m.result.nextCursor) {
            next++;
            send({ jsonrpc: '2.0', id: next, method: 'tools/list', params: { cursor: m.result.nextCursor } });
          } else {
            clearTimeout(timer);
            p.removeAllListeners('exit');
            p.kill();
            resolve(out);
          }
        }
      }
    });
    send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'toolbench-capture', version: '1' } } });
  });
}

const scratch = mkdtempSync(join(tmpdir(), 'toolbench-'));
const kube = join(scratch, 'kubeconfig');
writeFileSync(kube, kubeconfig);
const fill = (s) => s.replaceAll('{dir}', scratch).replaceAll('{kubeconfig}', kube);
let failed = 0;
for (const s of servers) {
  if (only.length && !only.includes(s.name)) continue;
  const entry = entryOf(s.package);
  const env = Object.fromEntries(Object.entries(s.env ?? {}).map(([k, v]) => [k, fill(v)]));
  try {
    const got = await list(process.execPath, [entry.path, ...(s.args ?? []).map(fill)], env);
    const doc = { name: s.name, package: s.package, version: entry.version, protocolVersion: got.protocolVersion, serverInfo: got.serverInfo, tools: got.tools };
    writeFileSync(join(outDirOf(s), `${s.name}.json`), JSON.stringify(doc, null, 2) + '\n');
    console.error(`${s.name}: ${got.tools.length} tools`);
  } catch (e) {
    failed++;
    console.error(`${s.name}: ${e.message}`);
  }
}
rmSync(scratch, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
