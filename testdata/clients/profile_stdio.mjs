// @modelcontextprotocol/sdk 1.x client over stdio against a profile:
// `capabilities hub serve --stdio [--profile <profile>]` ("-": no --profile).
//
//   node profile_stdio.mjs <profile> '<plan>'
//
// <plan> is a JSON array of steps, each one of
//   {"tool": name, "args": {...}}     tools/call
//   {"list": "resources"}             resources/list
//   {"read": uri}                     resources/read
//   {"request": method, "params": {}} any other request (skills/list, skills/get)
//   {"run": [args...]}                runs capabilities with args (a person's command)
//   {"waitResources": n}              waits until n resources/list_changed came in all
// Prints one JSON object: the instructions, the server's capabilities, the
// tools' names and, per step, what came back ({text, isError, structured}
// for a tool; the result, or {error} for a resource request).
import process from "node:process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { execFileSync } from "node:child_process";
import { ResourceListChangedNotificationSchema, ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { report, run, textOf, fail } from "./common.mjs";
import { bin } from "./common.mjs";

const [profile, planText] = process.argv.slice(2);
let plan;
try {
  plan = JSON.parse(planText);
} catch (e) {
  fail("the plan is not JSON: " + e);
}

run(async () => {
  const client = new Client({ name: "profile-e2e", version: "1.0.0" }, { capabilities: {} });
  const args = ["hub", "serve", "--stdio"];
  if (profile !== "-") args.push("--profile", profile);
  const transport = new StdioClientTransport({ command: bin, args, env: { ...process.env }, stderr: "inherit" });
  let changed = 0;
  let onChange = () => {};
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
    changed++;
    onChange();
  });
  await client.connect(transport);
  const out = {
    instructions: client.getInstructions(),
    capabilities: client.getServerCapabilities(),
    tools: (await client.listTools()).tools.map((t) => t.name),
    steps: [],
  };
  for (const step of plan) {
    try {
      if (step.tool) {
        const r = await client.callTool({ name: step.tool, arguments: step.args || {} });
        out.steps.push({ text: textOf(r), isError: !!r.isError, structured: r.structuredContent ?? null });
      } else if (step.list === "resources") {
        out.steps.push(await client.listResources());
      } else if (step.read) {
        out.steps.push(await client.readResource({ uri: step.read }));
      } else if (step.request) {
        out.steps.push(await client.request({ method: step.request, params: step.params || {} }, ResultSchema.passthrough()));
      } else if (step.run) {
        out.steps.push({ stdout: execFileSync(bin, step.run, { env: process.env }).toString() });
      } else if (step.waitResources) {
        const scale = Number(process.env.CAPABILITIES_TEST_TIMEOUT_SCALE || 3);
        const timer = setTimeout(() => fail(`no resources/list_changed within ${10 * scale} s`), 10000 * scale);
        while (changed < step.waitResources) await new Promise((resolve) => (onChange = resolve));
        clearTimeout(timer);
        out.steps.push({ changed });
      } else {
        fail("unknown step " + JSON.stringify(step));
      }
    } catch (e) {
      out.steps.push({ error: String(e && e.message ? e.message : e) });
    }
  }
  await client.close();
  report(out);
});
