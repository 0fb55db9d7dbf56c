// Signs fixed inputs with the libraries webhook senders use, so that
// daemon/webhook's verifiers are tested against signatures nobody here
// computed. Regenerate with:
//
//   cd daemon/webhook/testdata && npm ci && node vectors.mjs > vectors.json
//
// Every input is fixed, so the output is the same on every run.
import { sign } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";

const bodies = [
  '{"ref":"refs/heads/main","after":"0123456789abcdef0123456789abcdef01234567"}',
  '{"pull_request":{"head":{"ref":"feature/ü-✓-日本"}},"action":"opened"}\n',
  '{"issue":{"title":"$(touch /tmp/pwn) `id` ; rm -rf ~"}}',
  "  not json at all, but signed all the same \r\n\t",
  JSON.stringify({ commits: Array.from({ length: 200 }, (_, i) => ({ id: `c${i}`, message: "x".repeat(50) })) }),
];

// Standard Webhooks secrets are base64 keys, shown with a whsec_ prefix
// the libraries also accept without.
const key = (seed, n) => Buffer.from(Array.from({ length: n }, (_, i) => (seed * 31 + i * 7) & 0xff)).toString("base64");
const standardSecrets = ["whsec_" + key(1, 24), "whsec_" + key(2, 32), key(3, 64)];

const github = [];
const githubSecrets = ["It's a Secret to Everybody", "s3cr3t-with-ünïcode", "x"];
for (const [i, body] of bodies.entries()) {
  const secret = githubSecrets[i % githubSecrets.length];
  github.push({ secret, body, signature: await sign(secret, body) });
}

const standard = [];
const ids = ["msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "01J9Z8T6Q2", "a.b.c"];
const timestamps = [1700000000, 1767225600, 1614265330];
for (const [i, body] of ["", ...bodies].entries()) {
  const secret = standardSecrets[i % standardSecrets.length];
  const id = ids[i % ids.length];
  const timestamp = timestamps[i % timestamps.length];
  const signature = new Webhook(secret).sign(id, new Date(timestamp * 1000), body);
  standard.push({ secret, id, timestamp, body, signature });
}

process.stdout.write(
  JSON.stringify({ generator: "vectors.mjs with @octokit/webhooks-methods 6.0.0 and standardwebhooks 1.3.0", github, standard }, null, 1) + "\n",
);
