// The TypeScript SDK 1.x client on an HTTP session (protocol 2025-11-25)
// calls search, describe and execute, the calls the hub answers itself
// (engine/mcpserver/sessioncall.go), and cancels one execute. URL and TOKEN
// name a running endpoint; DESCRIBE is a tool address to describe. One JSON
// object on stdout: each result as the client took it (validated against
// the tool's output schema where there is one).
import process from "node:process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const textOf = (res) => (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

try {
  const client = new Client({ name: "session-calls", version: "1" });
  const tr = new StreamableHTTPClientTransport(new URL(process.env.URL), {
    requestInit: { headers: { Authorization: "Bearer " + process.env.TOKEN } },
  });
  await client.connect(tr);
  await client.listTools(); // the output schemas the client validates with
  const out = { protocolVersion: tr.protocolVersion };
  const take = (r) => ({ text: textOf(r), isError: !!r.isError, structured: r.structuredContent ?? null });
  out.search = take(await client.callTool({ name: "search", arguments: { query: "create an issue" } }));
  out.describe = take(await client.callTool({ name: "describe", arguments: { targets: [process.env.DESCRIBE] } }));
  out.execute = take(await client.callTool({ name: "execute", arguments: { code: "return {n: 1 + 1, s: 'é<>&'}" } }));
  out.thrown = take(await client.callTool({ name: "execute", arguments: { code: "throw new Error('no')" } }));
  out.badArgs = take(await client.callTool({ name: "execute", arguments: { code: 1 } }));
  try {
    await client.callTool({ name: "execute", arguments: { code: "for (;;) {}" } }, undefined, { signal: AbortSignal.timeout(500) });
    out.cancelled = "answered";
  } catch (e) {
    out.cancelled = e.name === "AbortError" || /abort/i.test(String(e)) ? "aborted" : String(e);
  }
  out.after = take(await client.callTool({ name: "execute", arguments: { code: "return 'still here'" } }));
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(0);
} catch (e) {
  process.stderr.write(`client: ${e && e.stack ? e.stack : e}\n`);
  process.exit(2);
}
