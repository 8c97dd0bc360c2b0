// The fixed cost of a request as the TypeScript SDK 1.x client sees it, over
// Streamable HTTP (URL, TOKEN and PID of a running `hub serve --http`) or
// stdio (without URL: spawns BIN `hub serve --stdio`). For each of trivial
// execute, search, describe and ping: the mean of N (300) back to back, the
// client's CPU per request (process.cpuUsage) and the server's
// (/proc/PID/stat utime+stime, 10 ms ticks), then the p50 of NGAP (40)
// requests 50 ms apart. One JSON object on stdout. Without PID, the HTTP
// server's pid is asked of its /alive.
//
//   URL=http://127.0.0.1:PORT/mcp TOKEN=$(cat $CAPABILITIES_HOME/hub/http-token) PID=<serve pid> node fixed_cost.mjs
//   BIN=/path/to/capabilities CAPABILITIES_HOME=<another hub> node fixed_cost.mjs
import { readFileSync } from "node:fs";
import process from "node:process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const n = Number(process.env.N || 300);
const ngap = Number(process.env.NGAP || 40);
const url = process.env.URL || "";
const serverCPU = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) * 10; // ms at USER_HZ 100
};
const client = new Client({ name: "fixed-cost", version: "1" });
const tr = url
  ? new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: "Bearer " + process.env.TOKEN } } })
  : new StdioClientTransport({ command: process.env.BIN, args: ["hub", "serve", "--stdio"], env: { ...process.env }, stderr: "inherit" });
await client.connect(tr);
await client.listTools();
let pid = url ? process.env.PID : tr.pid;
if (url && !pid) {
  const r = await fetch(new URL("/alive", url), { headers: { Authorization: "Bearer " + process.env.TOKEN } });
  pid = (await r.json()).pid;
}
const out = {};
const kinds = [
  ["execute", (i) => client.callTool({ name: "execute", arguments: { code: "return " + i } })],
  ["search", (i) => client.callTool({ name: "search", arguments: { query: "q " + i } })],
  ["describe", (i) => client.callTool({ name: "describe", arguments: { targets: ["ns" + i] } })],
  ["ping", () => client.ping()],
];
// Warm every kind first (WARM, 500 each), as a long-lived agent's client
// is: the client's own code (V8's JIT, the result validators it compiles)
// takes hundreds of calls to reach its steady cost; with 20, an execute
// cost the client 2.1-2.4 ms of CPU, with 500 about 1.0.
const warm = Number(process.env.WARM || 500);
for (const [, f] of kinds) for (let i = 0; i < warm; i++) await f(i);
for (const [name, f] of kinds) {
  const c0 = process.cpuUsage(), s0 = serverCPU(pid), t0 = performance.now();
  for (let i = 0; i < n; i++) await f(i);
  const c = process.cpuUsage(c0), s = serverCPU(pid) - s0, t = performance.now() - t0;
  const g = [];
  for (let i = 0; i < ngap; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const t1 = performance.now();
    await f(i);
    g.push(performance.now() - t1);
  }
  g.sort((a, b) => a - b);
  const r = (x) => Math.round(x * 100) / 100;
  out[name] = { b2bMs: r(t / n), clientCpuMs: r((c.user + c.system) / 1000 / n), serverCpuMs: r(s / n), gapP50Ms: r(g[g.length >> 1]) };
}
console.log(JSON.stringify(out));
await client.close();
