// @modelcontextprotocol/client 2.x over streamable HTTP, pinned to protocol
// 2026-07-28, against `capabilities hub serve --http`.
//
//   CAP_URL=http://127.0.0.1:N/mcp CAP_TOKEN=… node client2_http.mjs <answer>
//
// Declares form elicitation and answers every input request with <answer>
// (once | run | always | deny | decline). Runs tools/list, search and the J2
// journey's execute; the client fulfils the hub's input request (MRTR) and
// retries the same tools/call with inputResponses and the requestState. A
// fetch wrapper records each tools/call on the wire so the test can check the
// round trip. Prints one JSON object.
import process from "node:process";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { j2Code, report, run, textOf, fail } from "./common.mjs";

const url = process.env.CAP_URL;
const token = process.env.CAP_TOKEN;
if (!url || !token) fail("CAP_URL and CAP_TOKEN must be set");
const answer = process.argv[2] || "once";

const wire = [];
async function loggingFetch(input, init) {
  const body = init && typeof init.body === "string" ? JSON.parse(init.body) : null;
  const res = await fetch(input, init);
  if (body && body.method === "tools/call") {
    const entry = {
      protocolHeader: new Headers(init.headers).get("mcp-protocol-version"),
      tool: body.params.name,
      hasInputResponses: !!body.params.inputResponses,
      hasRequestState: typeof body.params.requestState === "string",
      status: res.status,
    };
    const text = await res.clone().text();
    // The answer may be JSON or one SSE event.
    const data = text.startsWith("{") ? text : (text.split("\n").find((l) => l.startsWith("data: ")) || "").slice(6);
    try {
      const msg = JSON.parse(data);
      entry.resultType = msg.result?.resultType ?? null;
      entry.inputRequestIds = msg.result?.inputRequests ? Object.keys(msg.result.inputRequests) : [];
      entry.error = msg.error ?? null;
    } catch {
      entry.unparsed = text.slice(0, 200);
    }
    wire.push(entry);
  }
  return res;
}

run(async () => {
  const client = new Client(
    { name: "client2-e2e", version: "2.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  const elicitations = [];
  client.setRequestHandler("elicitation/create", async (req) => {
    elicitations.push(req.params);
    if (answer === "decline" || answer === "cancel") return { action: answer };
    return { action: "accept", content: { choice: answer } };
  });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: loggingFetch,
  });
  await client.connect(transport);
  const out = { protocolVersion: client.getNegotiatedProtocolVersion(), server: client.getServerVersion() };
  const tools = await client.listTools();
  out.toolNames = tools.tools.map((t) => t.name).sort();
  const s = await client.callTool({ name: "search", arguments: { query: "record an item" } });
  out.search = { text: textOf(s), isError: !!s.isError };
  const j = await client.callTool({ name: "execute", arguments: { code: j2Code } });
  out.j2 = { text: textOf(j), structured: j.structuredContent, isError: !!j.isError };
  out.elicitations = elicitations;
  out.wire = wire;
  await client.close();
  report(out);
});
