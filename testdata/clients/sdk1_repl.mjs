// @modelcontextprotocol/sdk 1.x client over stdio that stays connected to one
// `hub serve --stdio` and takes tool calls from its own stdin, one JSON
// object a line ({"name": "search", "arguments": {...}}), answering each with
// one line {text, structured, isError, ms}. Prints {"ready": true} once
// connected. Lets a test change the hub from outside between calls. Its own
// arguments are added to serve's (--profile <name>).
import process from "node:process";
import readline from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { bin, report, run, textOf } from "./common.mjs";

run(async () => {
  const client = new Client({ name: "sdk1-repl", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: bin, args: ["hub", "serve", "--stdio", ...process.argv.slice(2)], env: { ...process.env }, stderr: "inherit" }));
  report({ ready: true });
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const req = JSON.parse(line);
    const t0 = performance.now();
    const res = await client.callTool(req);
    const ms = performance.now() - t0;
    report({ text: textOf(res), structured: res.structuredContent ?? null, isError: !!res.isError, ms });
  }
  await client.close();
});
