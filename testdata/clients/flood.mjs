// A flood of @modelcontextprotocol/sdk 1.x clients, for issue 36's
// "1,000 clients" (engine/mcpserver/e2e/flood_test.go). Two modes:
//
//   FLOOD_URL and FLOOD_TOKEN set: FLOOD_CLIENTS clients (100) connect at
//   once to that `hub serve --http`, each making FLOOD_CALLS executes (25)
//   one after another, all clients at the same time;
//   else: one client starts `hub serve --stdio` (relayed to the hub running
//   on the same CAPABILITIES_HOME) and sends FLOOD_CALLS executes (1,000)
//   at once over it.
//
// Each execute runs FLOOD_CODE (`return 1`). With FLOOD_BEFORE and
// FLOOD_AFTER, the first client makes one more execute of that code before
// the flood and after it. One JSON object on stdout: {ok, failed, errors:
// {message: count}, p50, p99, max, before, after} (latencies of the
// executes in ms; before and after are those executes' texts).
import process from "node:process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { bin, report, run, textOf } from "./common.mjs";

const url = process.env.FLOOD_URL || "";
const code = process.env.FLOOD_CODE || "return 1";
const clients = Number(process.env.FLOOD_CLIENTS || (url ? 100 : 1));
const calls = Number(process.env.FLOOD_CALLS || (url ? 25 : 1000));
const timeout = Number(process.env.FLOOD_TIMEOUT_MS || 600000);

function transport() {
  if (url) {
    return new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${process.env.FLOOD_TOKEN}` } },
    });
  }
  return new StdioClientTransport({ command: bin, args: ["hub", "serve", "--stdio"], env: { ...process.env }, stderr: "inherit" });
}

const lat = [];
const errors = {};
let ok = 0;
function failed(e) {
  const msg = String(e && e.message ? e.message : e).slice(0, 300);
  errors[msg] = (errors[msg] || 0) + 1;
}

async function execute(client) {
  const t0 = performance.now();
  try {
    const res = await client.callTool({ name: "execute", arguments: { code } }, undefined, { timeout });
    lat.push(performance.now() - t0);
    const s = res.structuredContent;
    if (res.isError || (s && s.status !== "completed")) failed(new Error("execute: " + textOf(res)));
    else ok++;
  } catch (e) {
    lat.push(performance.now() - t0);
    failed(e);
  }
}

run(async () => {
  const sessions = await Promise.all(
    Array.from({ length: clients }, async () => {
      const c = new Client({ name: "flood", version: "1.0.0" });
      try {
        await c.connect(transport(), { timeout });
        return c;
      } catch (e) {
        failed(e);
        return null;
      }
    }),
  );
  let before = null;
  if (process.env.FLOOD_BEFORE && sessions[0]) {
    const res = await sessions[0].callTool({ name: "execute", arguments: { code: process.env.FLOOD_BEFORE } }, undefined, { timeout });
    before = textOf(res);
  }
  await Promise.all(
    sessions.map(async (c) => {
      if (!c) return;
      if (url) {
        for (let i = 0; i < calls; i++) await execute(c);
      } else {
        await Promise.all(Array.from({ length: calls }, () => execute(c)));
      }
    }),
  );
  let after = null;
  if (process.env.FLOOD_AFTER && sessions[0]) {
    const res = await sessions[0].callTool({ name: "execute", arguments: { code: process.env.FLOOD_AFTER } }, undefined, { timeout });
    after = textOf(res);
  }
  await Promise.all(sessions.map((c) => c && c.close().catch(() => {})));
  lat.sort((a, b) => a - b);
  const at = (q) => (lat.length ? Math.round(lat[Math.min(lat.length - 1, Math.floor(q * lat.length))] * 10) / 10 : 0);
  const lost = Object.values(errors).reduce((a, b) => a + b, 0);
  report({ ok, failed: lost, errors, p50: at(0.5), p99: at(0.99), max: at(1), before, after });
});
