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
//   SCRIPTED_CALLS  a file to which every tools/call appends one line, the
//                   moment the server acts (before it answers)
//   SCRIPTED_HOLD   a file: while it exists, record acts (its line is in
//                   SCRIPTED_CALLS) and then holds its answer, so a test can kill
//                   the hub after the write happened and before the hub heard of it
//   SCRIPTED_NAME   serverInfo.name (default "scripted-mcp-server")
//   SCRIPTED_LEAK   the name of an environment variable holding a credential:
//                   adds the tools leak and leak-error, which echo it back raw,
//                   base64, URL-encoded, inside JSON, as hex and in an error
//   SCRIPTED_LEAK_LIST with SCRIPTED_LEAK, set to 1: the server describes
//                   itself with the credential: in serverInfo, instructions,
//                   the tool leak-self's title, description, schemas and
//                   annotations, and as hex in the name of a tool leak_<hex>
//   SCRIPTED_CORPUS  with SCRIPTED_LEAK, set to 1: adds the adversarial corpus
//                   leak-part ({part: 1|2}: one half of the credential),
//                   leak-escaped (a JSON text whose every string character is
//                   a \uXXXX escape, sent with every character escaped on the
//                   wire too), leak-forms (base32, base64 wrapped at 8 columns,
//                   a MIME-wrapped base64 document holding it, double
//                   URL-encoding), leak-big (a >64 KB result, the credential
//                   straddling byte 65536 of the line on the wire) and
//                   leak-encoded (percent-encoded in both cases, \u, \x, &#
//                   and &#x escapes, reversed, hex, base32, base64 at each
//                   offset, inside a JSON string)
//   SCRIPTED_BIG    a size in bytes: adds the read-only tool big, whose result is a
//                   JSON text of about that size, {"rows": [{"id", "text"}…]}; with
//                   SCRIPTED_LEAK each row's text holds the credential, at a
//                   position that shifts from row to row (so some copies
//                   straddle any slice boundary); big({error: true}) fails
//                   instead, with an error text of that size
//   SCRIPTED_ENV    set to 1: adds the read-only tool env, whose result is the
//                   server's whole environment and command line, {env, argv},
//                   as text and as structured content
//   SCRIPTED_REQUIRE the name of an environment variable the server needs to
//                   start (it exits at once without it)
//   SCRIPTED_STATE  a JSON file {"desc": "...", "tools": N} re-read on every
//                   tools/list, so a test can change the tools between refreshes
//   SCRIPTED_EVENTS a file to which the server appends one line per event: start,
//                   tools/list, list_changed (each notification it sent), call, ping
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
  if (process.env.SCRIPTED_BIG) {
    out.push({ name: "big", description: "Return a large JSON document of rows.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } });
  }
  if (process.env.SCRIPTED_ENV) {
    out.push({ name: "env", description: "Return the server's environment and command line.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } });
  }
  if (process.env.SCRIPTED_LEAK) {
    out.push(
      { name: "leak", description: "Echo the credential back in many encodings.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
      { name: "leak-error", description: "Fail with the credential in the message.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
    );
    const v = process.env[process.env.SCRIPTED_LEAK] || "";
    if (process.env.SCRIPTED_LEAK_LIST && v) {
      out.push(
        {
          name: "leak-self",
          title: "Token " + v,
          description: `Describes itself with the credential: ${v}, base64 ${Buffer.from(v).toString("base64")}.`,
          inputSchema: { type: "object", properties: { q: { type: "string", description: "default " + v, default: v } } },
          outputSchema: { type: "object", properties: { t: { type: "string", const: v } } },
          annotations: { readOnlyHint: true, title: v },
        },
        { name: "leak_" + Buffer.from(v).toString("hex"), description: "A tool whose name holds the credential.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
      );
    }
    if (process.env.SCRIPTED_CORPUS) {
      out.push(
        {
          name: "leak-part",
          description: "Return one half of the credential.",
          inputSchema: { type: "object", properties: { part: { type: "integer", enum: [1, 2] } }, required: ["part"] },
          annotations: { readOnlyHint: true },
        },
        { name: "leak-escaped", description: "Return the credential in JSON written with \\u escapes.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
        { name: "leak-forms", description: "Return the credential in base32, wrapped base64 and double URL-encoding.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
        { name: "leak-big", description: "Return a result over 64 KB with the credential across byte 65536.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
        { name: "leak-encoded", description: "Return the credential percent-encoded, escaped, reversed, as hex, base32 and base64 at each offset.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
      );
    }
  }
  return out;
}

// selfLeak is what SCRIPTED_LEAK_LIST adds to the initialize result.
function selfLeak() {
  const v = process.env.SCRIPTED_LEAK ? process.env[process.env.SCRIPTED_LEAK] || "" : "";
  if (!process.env.SCRIPTED_LEAK_LIST || !v) return {};
  return { serverInfo: { name: "scripted " + v, version: "1.0.0 " + v }, instructions: "Use the token " + v };
}

// uescape writes every UTF-16 unit of s as a \uXXXX escape.
function uescape(s) {
  let out = "";
  for (let i = 0; i < s.length; i++) out += "\\u" + s.charCodeAt(i).toString(16).padStart(4, "0");
  return out;
}

// base32 is RFC 4648 base32 with padding.
function base32(buf) {
  const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = 0, acc = 0, out = "";
  for (const b of buf) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += abc[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += abc[(acc << (5 - bits)) & 31];
  while (out.length % 8) out += "=";
  return out;
}

const wrap = (s, n) => s.match(new RegExp(`.{1,${n}}`, "g")).join("\n");

// corpus answers the adversarial leak tools; it returns false for others.
function corpus(name, args, id) {
  const v = process.env[process.env.SCRIPTED_LEAK] || "";
  const text = (t) => send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: t }] } });
  switch (name) {
    case "leak-part": {
      const mid = Math.floor(v.length / 2);
      text(JSON.stringify({ half: args.part === 1 ? v.slice(0, mid) : v.slice(mid) }));
      return true;
    }
    case "leak-escaped": {
      // The text is a JSON document whose strings are all escapes; the
      // line on the wire escapes every character of that text again.
      const doc = `{"${uescape("token")}":"${uescape(v)}","${uescape("header")}":"${uescape("Bearer " + v)}"}`;
      const line = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"${uescape(doc)}"}]}}`;
      process.stdout.write(line + "\n");
      return true;
    }
    case "leak-forms": {
      const doc = `GET /user HTTP/1.1\r\nHost: api.example.com\r\nUser-Agent: scripted\r\nAuthorization: Bearer ${v}\r\nAccept: */*\r\n\r\n`;
      text(JSON.stringify({
        base32: base32(Buffer.from(v)),
        base32lower: base32(Buffer.from(v)).toLowerCase().replace(/=+$/, ""),
        wrapped: wrap(Buffer.from(v).toString("base64"), 8),
        mime: wrap(Buffer.from(doc).toString("base64"), 76),
        doubleURL: encodeURIComponent(encodeURIComponent(v)),
      }));
      return true;
    }
    case "leak-encoded": {
      // One line per form a model decodes at once (issue 36, part 1).
      const b = Buffer.from(v);
      const hex2 = (c) => c.toString(16).padStart(2, "0");
      const pct = (up) => [...b].map((c) => "%" + (up ? hex2(c).toUpperCase() : hex2(c))).join("");
      const cps = [...v].map((ch) => ch.codePointAt(0));
      const b64at = (off, url, pad) => {
        const s = Buffer.concat([Buffer.from("x".repeat(off)), b, Buffer.from("!")]).toString(url ? "base64url" : "base64");
        return pad ? s : s.replace(/=+$/, "");
      };
      const lines = [
        "pct-lower " + pct(false),
        "pct-upper " + pct(true),
        "u " + uescape(v),
        "x " + [...b].map((c) => "\\x" + hex2(c)).join(""),
        "dec " + cps.map((c) => "&#" + c + ";").join(""),
        "hexref " + cps.map((c) => "&#x" + c.toString(16) + ";").join(""),
        "reversed " + [...v].reverse().join(""),
        "hex " + b.toString("hex").toUpperCase(),
        "base32 " + base32(b),
        ...[0, 1, 2].flatMap((off) => ["b64 " + b64at(off, false, true), "b64url " + b64at(off, true, false)]),
        "json " + JSON.stringify(JSON.stringify({ t: pct(true) })),
      ];
      text(lines.join("\n"));
      return true;
    }
    case "leak-big": {
      // Place the credential (as JSON writes it) across byte 65536 of the line.
      const enc = JSON.stringify(v).slice(1, -1);
      const head = JSON.stringify({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "@" }] } });
      const at = head.indexOf("@");
      const fill = 65536 - at - Math.floor(enc.length / 2);
      text("x".repeat(fill) + v + "y".repeat(4096));
      return true;
    }
  }
  return false;
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
        ...selfLeak(),
      });
    case "ping":
      event("ping");
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
      if (name === "env" && process.env.SCRIPTED_ENV) {
        const all = { env: { ...process.env }, argv: process.argv };
        return reply({ content: [{ type: "text", text: JSON.stringify(all) }], structuredContent: all });
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
      if (process.env.SCRIPTED_LEAK && process.env.SCRIPTED_CORPUS && corpus(name, args, msg.id)) return;
      if (name === "big" && process.env.SCRIPTED_BIG) {
        const v = process.env.SCRIPTED_LEAK ? process.env[process.env.SCRIPTED_LEAK] || "" : "";
        const size = Number(process.env.SCRIPTED_BIG);
        if (args.error) return reply({ isError: true, content: [{ type: "text", text: "e".repeat(size) }] });
        const rows = [];
        let total = 0;
        for (let i = 0; total < size; i++) {
          const pad = 3000 + ((i * 37) % 1000);
          const text = "a".repeat(pad) + v + "b".repeat(1000);
          rows.push({ id: i, text });
          total += text.length + 30;
        }
        return reply({ content: [{ type: "text", text: JSON.stringify({ rows }) }] });
      }
      if (name === "record") {
        const hold = process.env.SCRIPTED_HOLD;
        while (hold && fs.existsSync(hold)) await new Promise((r) => setTimeout(r, 5));
        return reply({ content: [{ type: "text", text: `recorded ${args.item}` }] });
      }
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
