// @modelcontextprotocol/sdk 1.x client over stdio against a direct-mode
// profile: `capabilities hub serve --stdio --profile <profile>`.
//
//   node direct_stdio.mjs list <profile>           no elicitation: tools/list; a read
//                                                  (reader__echo); a write
//                                                  (writer__record) twice before a
//                                                  decision; the person approves
//                                                  in a terminal (hub approve); the
//                                                  same call again; then the profile
//                                                  is edited (reader.echo taken out)
//                                                  and the client waits for
//                                                  tools/list_changed and lists again
//   node direct_stdio.mjs elicit <profile> <ans>   declares form elicitation, answers
//                                                  every form with <ans> (once | deny |
//                                                  decline | cancel), calls writer__record
//
// Prints one JSON object with what it saw.
import process from "node:process";
import { execFileSync } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { bin, report, run, textOf, fail } from "./common.mjs";

const [mode, profile, answer] = process.argv.slice(2);

const result = (r) => ({ text: textOf(r), isError: !!r.isError, structured: r.structuredContent ?? null });

run(async () => {
  const caps = mode === "elicit" ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: "direct-e2e", version: "1.0.0" }, { capabilities: caps });
  const elicitations = [];
  if (mode === "elicit") {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      elicitations.push(req.params);
      if (answer === "decline" || answer === "cancel") return { action: answer };
      return { action: "accept", content: { choice: answer } };
    });
  }
  let changed = 0;
  let onChange = () => {};
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changed++;
    onChange();
  });
  const transport = new StdioClientTransport({
    command: bin,
    args: ["hub", "serve", "--stdio", "--profile", profile],
    env: { ...process.env },
    stderr: "inherit",
  });
  await client.connect(transport);
  const out = { instructions: client.getInstructions(), capabilities: client.getServerCapabilities() };
  out.tools = (await client.listTools()).tools;

  const write = { name: "writer__record", arguments: { item: "from a direct call" } };
  if (mode === "list") {
    out.read = result(await client.callTool({ name: "reader__echo", arguments: { message: "hi" } }));
    out.pending = [result(await client.callTool(write)), result(await client.callTool(write))];
    const m = /run (r[0-9a-f]+)/.exec(out.pending[0].text);
    if (!m) fail("the pending result names no run: " + out.pending[0].text);
    out.runId = m[1];
    out.approve = execFileSync(bin, ["hub", "approve", out.runId, "--choice", "once"], { env: process.env }).toString();
    out.after = result(await client.callTool(write));
    out.again = result(await client.callTool(write));
    const waited = new Promise((resolve) => (onChange = resolve));
    execFileSync(bin, ["hub", "profiles", "edit", profile, "--remove-tool", "reader.echo"], { env: process.env });
    const scale = Number(process.env.CAPABILITIES_TEST_TIMEOUT_SCALE || 3);
    const timer = setTimeout(() => fail(`no tools/list_changed within ${10 * scale} s after the profile was edited`), 10000 * scale);
    await waited;
    clearTimeout(timer);
    out.changed = changed;
    out.toolsAfterEdit = (await client.listTools()).tools.map((t) => t.name);
  } else if (mode === "elicit") {
    out.write = result(await client.callTool(write));
    out.elicitations = elicitations;
  } else {
    fail(`unknown mode ${mode}`);
  }
  await client.close();
  report(out);
});
