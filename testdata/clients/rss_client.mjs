// Idle memory of `hub serve --stdio` as an agent leaves it: the
// @modelcontextprotocol/sdk 1.x client starts serve, lists its tools, runs a
// search (the hub builds its index), a trivial execute and one that calls
// BENCH_TOOL when set, then leaves the hub idle for RSS_IDLE_MS (3000) and
// reads the server's VmRSS and VmHWM from /proc. One JSON object on stdout:
//
//   {pid, afterStartKB, idleKB, peakKB, busyMs, afterIdleMs}
//
// afterStartKB is read right after tools/list, idleKB after the idle time,
// peakKB is the process's high-water mark. busyMs is a trivial execute
// right after another, afterIdleMs one right after the idle time (what the
// hub's trimming may cost the next call).
import fs from "node:fs";
import process from "node:process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { bin, report, run } from "./common.mjs";

const idleMs = Number(process.env.RSS_IDLE_MS || 3000);
const tool = process.env.BENCH_TOOL || "";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function status(pid) {
  const text = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (key) => Number((text.match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m")) || [])[1]);
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}

function check(res, what) {
  if (res.isError) throw new Error(what + " failed: " + JSON.stringify(res.content));
  return res;
}

run(async () => {
  const client = new Client({ name: "rss-client", version: "1.0.0" });
  const transport = new StdioClientTransport({ command: bin, args: ["hub", "serve", "--stdio"], env: { ...process.env }, stderr: "inherit" });
  await client.connect(transport);
  await client.listTools();
  const pid = transport.pid;
  const afterStart = status(pid);
  check(await client.callTool({ name: "search", arguments: { query: "create an issue in a repository" } }), "search");
  const trivial = async () => {
    const t0 = performance.now();
    check(await client.callTool({ name: "execute", arguments: { code: "return 1 + 1" } }), "execute");
    return performance.now() - t0;
  };
  await trivial();
  const busyMs = await trivial();
  if (tool) {
    const [ns, name] = tool.split(".");
    check(await client.callTool({ name: "execute", arguments: { code: `return await ${ns}.${name}({message: "hi"})` } }), "execute a call");
  }
  await sleep(idleMs);
  const idle = status(pid);
  const afterIdleMs = await trivial();
  report({ pid, afterStartKB: afterStart.rss, idleKB: idle.rss, peakKB: idle.hwm, busyMs, afterIdleMs });
  await client.close();
});
