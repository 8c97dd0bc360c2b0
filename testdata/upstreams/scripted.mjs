#!/usr/bin/env node
// A small MCP server over stdio, written against the wire protocol with no
// dependencies, whose misbehaviour the tests choose. It is a real process
// speaking newline-delimited JSON-RPC, used where the npm servers cannot be
// made to fail on purpose.
//
// Environment:
//   SCRIPTED_MODE   normal | legacy (ignores server/discover, never answers it)
//                   | garbage (prints non-protocol lines on stdout) | exit (exits at start)
//                   | silent (never answers anything)
//                   | hang-on-call (answers initialize and tools/list, never tools/call)
//                   | garbage-on-call (answers tools/call with non-protocol lines only)
//                   | wrong-id (answers tools/call under another request id)
//                   | close-stdout-on-call (closes its stdout on tools/call and
//                     keeps running until its stdin closes)
//                   | listchanged (after initialize, sends notifications/tools/list_changed
//                     every SCRIPTED_EVERY ms, default 5, until its stdin closes)
//   SCRIPTED_PAGE   tools/list page size (default: all in one page)
//   SCRIPTED_TOOLS  how many tools to list (default 3: echo, sleep, change-tools;
//                   4 adds record, a write; more adds generated tool_N)
//   SCRIPTED_DESC   description suffix (changes every tool's contract)
//   SCRIPTED_CALLS  a file to which every tools/call appends one line
//   SCRIPTED_NAME   serverInfo.name (default "scripted-mcp-server")
//   SCRIPTED_LEAK   the name of an environment variable holding a credential:
//                   adds the tools leak and leak-error, which echo it back raw,
//                   base64, URL-encoded, inside JSON, as hex and in an error
//   SCRIPTED_REQUIRE the name of an environment variable the server needs to
//                   start (it exits at once without it)
//   SCRIPTED_STATE  a JSON file {"desc": "...", "tools": N} re-read on every
//                   tools/list, so a test can change the tools between refreshes
//   SCRIPTED_EVENTS a file to which the server appends one line per event: start,
//                   tools/list, list_changed (each notification it sent), call
//   SCRIPTED_ONCE   a file: the *-on-call and wrong-id modes misbehave only while
//                   it does not exist, and create it when they do (so a restarted
//                   server behaves)
import fs from "node:fs";
import readline from "node:readline";

const mode = process.env.SCRIPTED_MODE || "normal";
const page = Number(process.env.SCRIPTED_PAGE || 0);
const count = Number(process.env.SCRIPTED_TOOLS || 3);
let suffix = process.env.SCRIPTED_DESC || "";
const callsFile = process.env.SCRIPTED_CALLS || "";
const eventsFile = process.env.SCRIPTED_EVENTS || "";
const event = (what) => eventsFile && fs.appendFileSync(eventsFile, what + "\n");
event("start");

if (process.env.SCRIPTED_REQUIRE && !process.env[process.env.SCRIPTED_REQUIRE]) {
  process.stderr.write(`scripted: ${process.env.SCRIPTED_REQUIRE} is not set; this server needs a credential to start\n`);
  process.exit(4);
}

if (mode === "exit") {
  process.stderr.write("scripted: fatal: missing configuration, exiting\n");
  process.exit(3);
}

function tools() {
  let n = count;
  if (process.env.SCRIPTED_STATE && fs.existsSync(process.env.SCRIPTED_STATE)) {
    const st = JSON.parse(fs.readFileSync(process.env.SCRIPTED_STATE, "utf8"));
    if (st.desc !== undefined) suffix = st.desc;
    if (st.tools !== undefined) n = st.tools;
  }
  const list = [
    {
      name: "echo",
      description: "Echo the message back." + suffix,
      inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
      annotations: { readOnlyHint: true },
    },
    {
      name: "sleep",
      description: "Sleep for ms milliseconds, then answer." + suffix,
      inputSchema: { type: "object", properties: { ms: { type: "integer", minimum: 0 } }, required: ["ms"] },
      annotations: { readOnlyHint: true },
    },
    {
      name: "change-tools",
      description: "Change every tool's description and announce it." + suffix,
      inputSchema: { type: "object", properties: {} },
      annotations: { readOnlyHint: false, destructiveHint: false },
    },
    {
      name: "record",
      description: "Record an item (a write)." + suffix,
      inputSchema: { type: "object", properties: { item: { type: "string" } }, required: ["item"] },
      annotations: { readOnlyHint: false, destructiveHint: false },
    },
  ];
  for (let i = list.length; i < n; i++) {
    list.push({ name: `tool_${i}`, description: `Generated tool ${i}.` + suffix, inputSchema: { type: "object" } });
  }
  const out = list.slice(0, n);
  if (process.env.SCRIPTED_LEAK) {
    out.push(
      { name: "leak", description: "Echo the credential back in many encodings.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
      { name: "leak-error", description: "Fail with the credential in the message.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
    );
  }
  return out;
}

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + "\n");
  if (mode === "garbage") process.stdout.write("debug: sent a message\n");
}

if (mode === "garbage") {
  process.stdout.write("Starting scripted server v1 ...\n");
  process.stdout.write("{not json at all\n");
}

const onCallModes = ["hang-on-call", "garbage-on-call", "wrong-id", "close-stdout-on-call"];

// misbehaveOnce reports whether a misbehaving mode acts up on this call:
// always, or with SCRIPTED_ONCE only the first time across restarts.
function misbehaveOnce() {
  const once = process.env.SCRIPTED_ONCE;
  if (!once) return true;
  if (fs.existsSync(once)) return false;
  fs.writeFileSync(once, mode + "\n");
  return true;
}

// startAnnouncing sends tools/list_changed in a loop, as a server whose
// tools never settle would.
function startAnnouncing() {
  const every = Number(process.env.SCRIPTED_EVERY || 5);
  const timer = setInterval(() => {
    send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
    event("list_changed");
  }, every);
  process.stdin.on("end", () => clearInterval(timer));
}

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", async (line) => {
  if (mode === "silent") return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  if (msg.id === undefined) return; // a notification
  const reply = (result) => send({ jsonrpc: "2.0", id: msg.id, result });
  const fail = (code, message) => send({ jsonrpc: "2.0", id: msg.id, error: { code, message } });
  switch (msg.method) {
    case "server/discover":
      if (mode === "legacy") return; // the trap: a legacy server that never answers
      return fail(-32601, "Method not found");
    case "initialize":
      if (mode === "listchanged") startAnnouncing();
      return reply({
        protocolVersion: "2025-11-25",
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: process.env.SCRIPTED_NAME || "scripted-mcp-server", version: "1.0.0" },
      });
    case "ping":
      return reply({});
    case "tools/list": {
      event("tools/list");
      const all = tools();
      if (!page) return reply({ tools: all });
      const start = Number(msg.params?.cursor || 0);
      const next = start + page < all.length ? String(start + page) : undefined;
      return reply({ tools: all.slice(start, start + page), ...(next ? { nextCursor: next } : {}) });
    }
    case "tools/call": {
      const { name, arguments: args = {} } = msg.params || {};
      event("call");
      if (onCallModes.includes(mode) && misbehaveOnce()) {
        switch (mode) {
          case "hang-on-call":
            return;
          case "garbage-on-call":
            process.stdout.write("working on it...\n{half a json\n");
            return;
          case "wrong-id":
            return send({ jsonrpc: "2.0", id: typeof msg.id === "number" ? msg.id + 1000 : `${msg.id}-other`, result: { content: [{ type: "text", text: "for someone else" }] } });
          case "close-stdout-on-call":
            fs.closeSync(1);
            return;
        }
      }
      if (callsFile) fs.appendFileSync(callsFile, JSON.stringify({ name, args }) + "\n");
      if (name === "echo") return reply({ content: [{ type: "text", text: `Echo: ${args.message}` }] });
      if (name === "sleep") {
        await new Promise((r) => setTimeout(r, args.ms || 0));
        return reply({ content: [{ type: "text", text: `slept ${args.ms}` }] });
      }
      if (name === "leak" || name === "leak-error") {
        const v = process.env[process.env.SCRIPTED_LEAK] || "";
        if (name === "leak-error") return reply({ isError: true, content: [{ type: "text", text: `auth failed for token ${v}` }] });
        const b64 = Buffer.from(v).toString("base64");
        return reply({
          content: [
            { type: "text", text: `raw=${v} b64=${b64} b64url=${Buffer.from(v).toString("base64url")} url=${encodeURIComponent(v)} hex=${Buffer.from(v).toString("hex")}` },
            { type: "text", text: JSON.stringify({ token: v, nested: { header: `Bearer ${v}` } }) },
          ],
          structuredContent: { token: v, basic: Buffer.from(`user:${v}`).toString("base64") },
        });
      }
      if (name === "record") return reply({ content: [{ type: "text", text: `recorded ${args.item}` }] });
      if (name === "change-tools") {
        suffix += " (changed)";
        reply({ content: [{ type: "text", text: "changed" }] });
        return send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
      }
      if (tools().some((t) => t.name === name)) return reply({ content: [{ type: "text", text: name }] });
      return reply({ isError: true, content: [{ type: "text", text: `unknown tool ${name}` }] });
    }
    default:
      return fail(-32601, "Method not found");
  }
});
