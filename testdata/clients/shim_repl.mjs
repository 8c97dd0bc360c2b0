// @modelcontextprotocol/sdk 1.x client over stdio, like sdk1_repl.mjs, for
// the shim's tests: it declares form elicitation (answering every form with
// the choice in argv[2], default "once", after SHIM_ANSWER_DELAY_MS, default
// 0: a person taking their time) and reports a failed request as
// {error} instead of ending. One line in ({"name", "arguments"}), one line
// out ({text, structured, isError, error, elicited, ms}); {"ready": true}
// once connected.
import process from "node:process";
import readline from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { bin, report, run, textOf } from "./common.mjs";

const answer = process.argv[2] || "once";
const delay = Number(process.env.SHIM_ANSWER_DELAY_MS || 0);

run(async () => {
  const client = new Client({ name: "shim-repl", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  let elicited = 0;
  client.setRequestHandler(ElicitRequestSchema, async () => {
    elicited++;
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    return { action: "accept", content: { choice: answer } };
  });
  await client.connect(new StdioClientTransport({ command: bin, args: ["hub", "serve", "--stdio"], env: { ...process.env }, stderr: "inherit" }));
  report({ ready: true });
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const req = JSON.parse(line);
    const t0 = performance.now();
    try {
      const res = await client.callTool(req);
      report({ text: textOf(res), structured: res.structuredContent ?? null, isError: !!res.isError, elicited, ms: performance.now() - t0 });
    } catch (e) {
      report({ error: String(e && e.message ? e.message : e), elicited, ms: performance.now() - t0 });
    }
  }
  await client.close();
});
