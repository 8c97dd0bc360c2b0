#!/usr/bin/env node
// A stdio MCP server that is slow to start, as `npx -y` is on a cold npm
// cache: for SLOW_START_MS milliseconds (default 60000) it reads nothing
// from stdin and writes download-like progress on stderr, four lines a
// second; then it becomes scripted.mjs, a real MCP server (its SCRIPTED_*
// variables apply).
//
// SLOW_START_MODE=silent: it hangs instead, reading nothing, writing
// nothing and spending no CPU time, and never starts.
const ms = Number(process.env.SLOW_START_MS || 60000);

if (process.env.SLOW_START_MODE === "silent") {
  setInterval(() => {}, 1 << 30);
} else {
  const start = Date.now();
  let n = 0;
  const progress = setInterval(() => {
    n++;
    const pct = Math.min(99, Math.floor(((Date.now() - start) * 100) / ms));
    process.stderr.write(`fetching package-${n}.tgz (${pct}%)\n`);
  }, 250);
  setTimeout(async () => {
    clearInterval(progress);
    process.stderr.write("fetched; starting the server\n");
    await import("./scripted.mjs");
  }, ms);
}
