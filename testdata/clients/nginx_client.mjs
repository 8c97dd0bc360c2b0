// A real MCP client through nginx in front of several `hub serve --http`
// processes (engine/mcpserver/e2e/nginx_test.go):
//
//   CAP_URL=http://127.0.0.1:N/mcp CAP_TOKEN=… node nginx_client.mjs <sdk1|sdk2> tour
//   … node nginx_client.mjs <sdk1|sdk2> write            J2: a read, then a write that asks
//   … node nginx_client.mjs <sdk1|sdk2> resume <runId>   execute({resume})
//
// sdk1 is @modelcontextprotocol/sdk 1.x: an older protocol's session, whose
// every request carries its Mcp-Session-Id (nginx routes it by the id's
// node). sdk2 is @modelcontextprotocol/client 2.x pinned to 2026-07-28:
// stateless requests, no affinity. Neither declares elicitation: a write
// that asks leaves the run awaiting_approval. tour lists the tools, then
// search, describe and a read-only execute. A fetch wrapper records each
// request's method, the session id it sent and the status. Prints one JSON
// object.
import process from "node:process";
import { Client as Client1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as Transport1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from "@modelcontextprotocol/client";
import { j2Code, report, run, textOf, fail } from "./common.mjs";

const url = process.env.CAP_URL;
const token = process.env.CAP_TOKEN;
if (!url || !token) fail("CAP_URL and CAP_TOKEN must be set");
const [sdk, mode, runId] = process.argv.slice(2);

const wire = [];
async function loggingFetch(input, init) {
  let method = null;
  try {
    method = init && typeof init.body === "string" ? JSON.parse(init.body).method ?? "(response)" : null;
  } catch {}
  const hdrs = new Headers(init?.headers);
  const res = await fetch(input, init);
  wire.push({
    http: init?.method ?? "GET",
    method,
    sent: hdrs.get("mcp-session-id"),
    got: res.headers.get("mcp-session-id"),
    protocol: hdrs.get("mcp-protocol-version"),
    status: res.status,
  });
  return res;
}

function result(r) {
  return { text: textOf(r), structured: r.structuredContent ?? null, isError: !!r.isError };
}

run(async () => {
  const requestInit = { headers: { Authorization: `Bearer ${token}` } };
  let client, transport;
  if (sdk === "sdk1") {
    client = new Client1({ name: "nginx-sdk1", version: "1.0.0" }, { capabilities: {} });
    transport = new Transport1(new URL(url), { requestInit, fetch: loggingFetch });
  } else if (sdk === "sdk2") {
    client = new Client2({ name: "nginx-sdk2", version: "2.0.0" }, { capabilities: {}, versionNegotiation: { mode: { pin: "2026-07-28" } } });
    transport = new Transport2(new URL(url), { requestInit, fetch: loggingFetch });
  } else {
    fail(`unknown client ${sdk}: sdk1 or sdk2`);
  }
  await client.connect(transport);
  const out = { sessionId: transport.sessionId ?? null };
  if (sdk === "sdk2") out.protocolVersion = client.getNegotiatedProtocolVersion();
  if (mode === "tour") {
    out.toolNames = (await client.listTools()).tools.map((t) => t.name).sort();
    out.search = result(await client.callTool({ name: "search", arguments: { query: "echo a message" } }));
    out.describe = result(await client.callTool({ name: "describe", arguments: { targets: ["reader.echo"] } }));
    out.read = result(await client.callTool({ name: "execute", arguments: { code: `return await reader.echo({message: "through nginx"})` } }));
  } else if (mode === "write") {
    out.write = result(await client.callTool({ name: "execute", arguments: { code: j2Code } }));
  } else if (mode === "resume") {
    if (!runId) fail("resume needs a runId");
    out.resume = result(await client.callTool({ name: "execute", arguments: { resume: runId } }));
  } else {
    fail(`unknown mode ${mode}`);
  }
  out.wire = wire;
  await client.close();
  report(out);
});
