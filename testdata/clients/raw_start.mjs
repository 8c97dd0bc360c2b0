// How long `hub serve --stdio` takes to start, seen by a client with no
// SDK (so that the client's own start is not in the figure): spawn, write
// initialize, the initialized notification and tools/list at once, and
// time until tools/list is answered; then, after BENCH_GAP_MS (0), one
// execute of trivial code. BENCH_N (15) starts, one after the other; the
// hub is CAPABILITIES_HOME's. Prints medians:
//
//   {n, listP50, listMin, listMax, firstExecuteP50}
//
//   CAP_BIN=bin/capabilities node testdata/clients/raw_start.mjs
import { spawn } from "node:child_process";
import process from "node:process";
import { bin, report, run } from "./common.mjs";

const n = Number(process.env.BENCH_N || 15);
const gapMs = Number(process.env.BENCH_GAP_MS || 0);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// once starts the hub and returns [ms to tools/list, ms of the first execute].
async function once() {
  const t0 = performance.now();
  const p = spawn(bin, ["hub", "serve", "--stdio"], { stdio: ["pipe", "pipe", "ignore"] });
  const waiting = new Map();
  let buf = "";
  p.stdout.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const m = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      const w = waiting.get(m.id);
      if (w) {
        waiting.delete(m.id);
        if (m.error) w.reject(new Error(JSON.stringify(m.error)));
        else w.resolve(m.result);
      }
    }
  });
  const answer = (id) => new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
  const send = (msg) => p.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n");
  send({ id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
  send({ method: "notifications/initialized" });
  send({ id: 2, method: "tools/list", params: {} });
  const listed = answer(2);
  await answer(1);
  await listed;
  const list = performance.now() - t0;
  await sleep(gapMs);
  const t1 = performance.now();
  send({ id: 3, method: "tools/call", params: { name: "execute", arguments: { code: "return 0" } } });
  const res = await answer(3);
  if (res.isError) throw new Error("execute failed: " + JSON.stringify(res.content));
  const first = performance.now() - t1;
  p.stdin.end();
  await new Promise((r) => p.on("exit", r));
  return [list, first];
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const r2 = (x) => Math.round(x * 100) / 100;

run(async () => {
  const all = [];
  for (let i = 0; i < n; i++) all.push(await once());
  const lists = all.map((x) => x[0]);
  report({ n, listP50: r2(median(lists)), listMin: r2(Math.min(...lists)), listMax: r2(Math.max(...lists)), firstExecuteP50: r2(median(all.map((x) => x[1]))) });
});
