// A client of contextd's HTTP API that nobody here wrote: its types come
// from the API's own openapi.json through openapi-typescript (gen/schema.d.ts,
// made by the e2e suite), its requests from openapi-fetch, over the unix
// socket through undici. `tsc --checkJs` checks these calls against the
// generated types (the answers as application/json, not the event
// stream the same endpoint also offers) before node runs them.
//
// usage: node client.mjs SOCKET WORKSPACE
import createClient from "openapi-fetch";
import { Agent } from "undici";

const [socketPath, workspace] = process.argv.slice(2);
const dispatcher = new Agent({ connect: { socketPath } });

/** @type {import("openapi-fetch").Client<import("./gen/schema.js").paths, "application/json">} */
const client = createClient({
  baseUrl: "http://localhost",
  // @ts-ignore: undici's dispatcher option is not in the DOM's RequestInit
  fetch: (request) => fetch(request, { dispatcher }),
});

const out = {};

const call = await client.POST("/v1/calls", {
  body: { tool: "safe_bash", input: { command: "echo from-the-generated-client" }, workspace },
});
if (call.error) throw new Error("POST /v1/calls: " + JSON.stringify(call.error));
out.call = { output: call.data.output, exit_code: call.data.result.exit_code, id: call.data.id };

const stored = await client.POST("/v1/memory/store", {
  body: {
    workspace,
    input: {
      title: "generated client stores a memory",
      description: "when checking that the HTTP API works from a generated client",
      content: "openapi-typescript and openapi-fetch reached contextd over its unix socket",
      outcome: "success",
    },
  },
});
if (stored.error) throw new Error("POST /v1/memory/store: " + JSON.stringify(stored.error));

const found = await client.POST("/v1/memory/search", {
  body: { workspace, input: { query: "generated client unix socket" } },
});
if (found.error) throw new Error("POST /v1/memory/search: " + JSON.stringify(found.error));
out.search = { output: found.data.output };

const status = await client.GET("/v1/status");
if (status.error) throw new Error("GET /v1/status: " + JSON.stringify(status.error));
out.status = { pid: status.data.pid };

process.stdout.write(JSON.stringify(out) + "\n");
await dispatcher.close();
