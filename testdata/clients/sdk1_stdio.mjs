// @modelcontextprotocol/sdk 1.x client over stdio against
// `capabilities hub serve --stdio`.
//
//   node sdk1_stdio.mjs surface          no elicitation: tools/list, search,
//                                        describe, execute (read), J2 pending,
//                                        resume before a decision
//   node sdk1_stdio.mjs elicit <answer>  declares form elicitation and answers
//                                        every request with <answer>:
//                                        once | run | always | deny | decline | cancel
//   node sdk1_stdio.mjs skill <name> <q> search <q>, describe skill:<name>, and
//                                        hub.describe("skill:<name>") in execute
//
// Prints one JSON object with what it saw.
import process from "node:process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { bin, j2Code, report, run, textOf, fail } from "./common.mjs";

const [mode, answer, query] = process.argv.slice(2);

run(async () => {
  const caps = mode === "elicit" ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: "sdk1-e2e", version: "1.0.0" }, { capabilities: caps });
  const elicitations = [];
  if (mode === "elicit") {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      elicitations.push(req.params);
      if (answer === "decline" || answer === "cancel") return { action: answer };
      return { action: "accept", content: { choice: answer } };
    });
  }
  const transport = new StdioClientTransport({
    command: bin,
    args: ["hub", "serve", "--stdio"],
    env: { ...process.env },
    stderr: "inherit",
  });
  await client.connect(transport);
  const out = { protocolVersion: transport._protocolVersion ?? null, server: client.getServerVersion() };
  out.instructions = client.getInstructions();

  const tools = await client.listTools();
  out.tools = tools.tools;

  if (mode === "surface") {
    const s = await client.callTool({ name: "search", arguments: { query: "echo a message" } });
    out.search = { text: textOf(s), isError: !!s.isError };
    const d = await client.callTool({ name: "describe", arguments: { targets: ["reader.echo"] } });
    out.describe = { text: textOf(d), isError: !!d.isError };
    const e = await client.callTool({ name: "execute", arguments: { code: 'return await reader.echo({message: "hi"})' } });
    out.read = { text: textOf(e), structured: e.structuredContent, isError: !!e.isError };
    const j = await client.callTool({ name: "execute", arguments: { code: j2Code } });
    out.j2 = { text: textOf(j), structured: j.structuredContent, isError: !!j.isError };
    const runId = j.structuredContent?.runId;
    if (!runId) fail("J2 returned no runId: " + JSON.stringify(j));
    const r1 = await client.callTool({ name: "execute", arguments: { resume: runId } });
    const r2 = await client.callTool({ name: "execute", arguments: { resume: runId } });
    out.resume = [
      { text: textOf(r1), structured: r1.structuredContent },
      { text: textOf(r2), structured: r2.structuredContent },
    ];
  } else if (mode === "skill") {
    const s = await client.callTool({ name: "search", arguments: { query } });
    out.search = { text: textOf(s), isError: !!s.isError };
    const d = await client.callTool({ name: "describe", arguments: { targets: ["skill:" + answer] } });
    out.describe = { text: textOf(d), isError: !!d.isError };
    const e = await client.callTool({ name: "execute", arguments: { code: `return await hub.describe("skill:${answer}")` } });
    out.read = { text: textOf(e), structured: e.structuredContent, isError: !!e.isError };
  } else if (mode === "elicit") {
    const j = await client.callTool({ name: "execute", arguments: { code: j2Code } });
    out.j2 = { text: textOf(j), structured: j.structuredContent, isError: !!j.isError };
    out.elicitations = elicitations;
  } else {
    fail(`unknown mode ${mode}`);
  }
  await client.close();
  report(out);
});
