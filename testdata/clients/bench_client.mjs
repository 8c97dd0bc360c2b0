// Client-measured latencies of the hub as an agent sees them, with
// @modelcontextprotocol/sdk 1.x over stdio (`hub serve --stdio`, started by
// this script) or Streamable HTTP (BENCH_URL and BENCH_TOKEN: a running
// `hub serve --http`). One JSON object on stdout:
//
//   {startMs, firstExecuteMs, series: {name: {n, p50, p90, p99, min, max}}}
//
// startMs is spawn → initialize and tools/list answered; firstExecuteMs the
// first execute (trivial code, or with BENCH_FIRST=call one call of
// BENCH_TOOL) right after. Then each series runs BENCH_N
// times back to back ("…/b2b") and with BENCH_GAP_MS between calls
// ("…/gap"): trivial code; code calling BENCH_TOOL once (when set, e.g.
// "up.echo"), and the same call in code that uses its value; search; and, with BENCH_DIRECT (the upstream's command line as
// a JSON array), the same tool called directly over stdio (the floor).
// BENCH_LIVE (comma-separated tool addresses, e.g. "up.echo,live1.echo")
// are each called once before the series, so that their upstreams are
// live while they run; over stdio, upstreamCpuMs is then the CPU time the
// hub's child processes (the upstreams) used during the series.
import fs from "node:fs";
import process from "node:process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { bin, report, run } from "./common.mjs";

const n = Number(process.env.BENCH_N || 30);
const gapMs = Number(process.env.BENCH_GAP_MS || 50);
const tool = process.env.BENCH_TOOL || "";
const direct = process.env.BENCH_DIRECT ? JSON.parse(process.env.BENCH_DIRECT) : null;
const url = process.env.BENCH_URL || "";
const live = (process.env.BENCH_LIVE || "").split(",").filter(Boolean);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function stats(ms) {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  const r = (x) => Math.round(x * 100) / 100;
  // p99 by nearest rank: the 99th of 100, the largest of fewer than 100.
  const p99 = s[Math.max(0, Math.ceil(0.99 * s.length) - 1)];
  return { n: s.length, p50: r(at(0.5)), p90: r(at(0.9)), p99: r(p99), min: r(s[0]), max: r(s[s.length - 1]) };
}

async function timed(f) {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

// series runs f n times back to back, then n times with gaps.
async function series(out, name, f) {
  const b2b = [];
  for (let i = 0; i < n; i++) b2b.push(await timed(() => f(i)));
  out[name + "/b2b"] = stats(b2b);
  const gap = [];
  for (let i = 0; i < n; i++) {
    await sleep(gapMs);
    gap.push(await timed(() => f(i)));
  }
  out[name + "/gap"] = stats(gap);
}

// childrenCpuMs is the CPU time (user + system) the children of pid have
// used so far, from /proc (Linux).
function childrenCpuMs(pid) {
  let ticks = 0;
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${d}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(f[1]) === pid) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks * 10; // USER_HZ is 100
}

function check(res, what) {
  if (res.isError) throw new Error(what + " failed: " + JSON.stringify(res.content));
  const s = res.structuredContent;
  if (s && s.status && s.status !== "completed") throw new Error(what + " ended " + s.status + ": " + JSON.stringify(s));
  return res;
}

run(async () => {
  const client = new Client({ name: "bench", version: "1.0.0" });
  const t0 = performance.now();
  const transport = url
    ? new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: "Bearer " + process.env.BENCH_TOKEN } } })
    : new StdioClientTransport({ command: bin, args: ["hub", "serve", "--stdio"], env: { ...process.env }, stderr: "inherit" });
  await client.connect(transport);
  await client.listTools();
  const startMs = performance.now() - t0;
  // New code every time: the same code twice would be remembered by the pipeline.
  const exec = (code) => client.callTool({ name: "execute", arguments: { code } }).then((r) => check(r, "execute"));
  // BENCH_FIRST=call: the first execute calls BENCH_TOOL (and so starts
  // its upstream) instead of running trivial code.
  const first = process.env.BENCH_FIRST === "call" && tool ? `return await ${tool}({message: "first"})` : "return 0";
  const firstExecuteMs = await timed(() => exec(first));
  for (const t of live) await exec(`return await ${t}({message: "live"})`);
  const hubPid = url ? 0 : transport.pid;
  const cpu0 = hubPid ? childrenCpuMs(hubPid) : 0;
  const out = {};
  await series(out, "execute-trivial", (i) => exec("return " + (i + 1)));
  if (tool) {
    await series(out, "execute-one-call", (i) => exec(`return await ${tool}({message: "m${i}"})`));
    // The same call in code that does something with its value: the
    // sandbox runs it (no path without JavaScript).
    await series(out, "execute-call-and-code", (i) => exec(`const r = await ${tool}({message: "m${i}"});\nreturn {r, i: ${i}}`));
  }
  await series(out, "search", (i) => client.callTool({ name: "search", arguments: { query: "create issue " + i } }).then((r) => check(r, "search")));
  const upstreamCpuMs = hubPid && live.length ? childrenCpuMs(hubPid) - cpu0 : undefined;
  await client.close();
  if (direct) {
    const up = new Client({ name: "bench-direct", version: "1.0.0" });
    await up.connect(new StdioClientTransport({ command: direct[0], args: direct.slice(1), env: { ...process.env }, stderr: "inherit" }));
    const name = tool.slice(tool.indexOf(".") + 1);
    await series(out, "direct-call", (i) => up.callTool({ name, arguments: { message: "m" + i } }).then((r) => check(r, "direct call")));
    await up.close();
  }
  report({ startMs: Math.round(startMs * 100) / 100, firstExecuteMs: Math.round(firstExecuteMs * 100) / 100, upstreamCpuMs, series: out });
});
