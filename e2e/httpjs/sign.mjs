// Signs a webhook delivery with the senders' own libraries, GitHub's
// (@octokit/webhooks-methods) or Standard Webhooks' (standardwebhooks), and
// prints curl's arguments for the headers, one per line, then nothing else:
// the body is the file given.
//
// usage: node sign.mjs github|standard SECRET BODYFILE ID [UNIXSECONDS]
import { readFileSync } from "node:fs";
import { sign } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";

const [scheme, secret, bodyFile, id, at] = process.argv.slice(2);
const body = readFileSync(bodyFile, "utf8");
const headers = [];
if (scheme === "github") {
  headers.push("X-Hub-Signature-256: " + (await sign(secret, body)));
  headers.push("X-GitHub-Delivery: " + id);
  headers.push("X-GitHub-Event: push");
} else {
  const when = at ? new Date(Number(at) * 1000) : new Date();
  const signature = new Webhook(secret).sign(id, when, body);
  headers.push("webhook-id: " + id);
  headers.push("webhook-timestamp: " + Math.floor(when.getTime() / 1000));
  headers.push("webhook-signature: " + signature);
}
headers.push("Content-Type: application/json");
process.stdout.write(headers.join("\n") + "\n");
