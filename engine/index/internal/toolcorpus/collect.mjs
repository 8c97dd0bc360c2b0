// collect.mjs lists the tools of npm MCP servers, offline from any service:
// for each package name of a list it installs the package into a temp folder
// (npm install --ignore-scripts, a timeout each), starts its bin over stdio
// with the TypeScript SDK client (testdata/npm/node_modules, SDK 1.x), with
// no credentials and an empty environment but PATH and HOME, calls
// tools/list with a timeout and appends one JSON line per package to the
// corpus:
//
//	{"package","version","license","tools":[{"name","description","params"}]}
//
// params are the input schema's property names and their descriptions.
// Packages that fail (no bin, need a key to start, time out) get a line with
// "error" and no tools, so the corpus records what was tried.
//
// Usage (from the repo root; development time only, not in CI):
//
//	node engine/index/internal/toolcorpus/collect.mjs \
//	  engine/index/internal/toolcorpus/packages.txt /tmp/corpus.jsonl [parallel=4]
//
// Packages already in the output are skipped, so a run can be resumed.
import { Client } from "../../../../testdata/npm/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js";
import { StdioClientTransport } from "../../../../testdata/npm/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [listFile, outFile, par = "4"] = process.argv.slice(2);
if (!listFile || !outFile) {
  console.error("usage: node collect.mjs PACKAGES.txt OUT.jsonl [parallel]");
  process.exit(2);
}
const INSTALL_MS = 120_000;
const LIST_MS = 25_000;

const names = fs.readFileSync(listFile, "utf8").split("\n").map((s) => s.trim()).filter((s) => s && !s.startsWith("#"));
const done = new Set();
if (fs.existsSync(outFile)) {
  for (const l of fs.readFileSync(outFile, "utf8").split("\n")) {
    if (l) done.add(JSON.parse(l).package);
  }
}

function run(cmd, args, opts) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { ...opts, maxBuffer: 1 << 24 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(" ")}: ${err.message.split("\n")[0]} ${String(stderr).slice(-300)}`));
      else resolve(stdout);
    });
  });
}

function withTimeout(p, ms, what) {
  let t;
  return Promise.race([p, new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`${what}: timed out after ${ms} ms`)), ms); })]).finally(() => clearTimeout(t));
}

function params(schema) {
  const out = {};
  for (const [k, v] of Object.entries(schema?.properties ?? {})) {
    out[k] = typeof v?.description === "string" ? v.description : "";
  }
  return out;
}

// placeholders gives every credential-like variable the package's own code
// reads (process.env.X) a made-up value, so a server that refuses to start
// without one lists its tools: tools/list needs no service. No real
// credential is ever set.
function placeholders(pdir) {
  const env = {};
  const files = [];
  const walk = (d, depth) => {
    if (depth > 4 || files.length > 300) return;
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.name === "node_modules") continue;
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p, depth + 1);
      else if (/\.(c|m)?js$/.test(e.name)) files.push(p);
    }
  };
  walk(pdir, 0);
  for (const f of files) {
    let s;
    try {
      if (fs.statSync(f).size > 8 << 20) continue;
      s = fs.readFileSync(f, "utf8");
    } catch { continue; }
    for (const m of s.matchAll(/process\.env(?:\.|\[["'])([A-Z][A-Z0-9_]{2,})/g)) {
      const k = m[1];
      if (!/KEY|TOKEN|SECRET|PASSWORD|PASS|API|URL|ENDPOINT|ID$|USER|ACCOUNT|DOMAIN|PROJECT|ORG|WORKSPACE|TENANT|REGION|EMAIL|SITE|INSTANCE/.test(k)) continue;
      if (/^(NODE_|npm_)|PORT|TRANSPORT|PROXY|DEBUG|LOG|MODE|HTTP/.test(k)) continue;
      env[k] = /URL|ENDPOINT|BASE|SITE|INSTANCE|DOMAIN/.test(k) ? "https://example.invalid" : /EMAIL/.test(k) ? "placeholder@example.invalid" : /REGION/.test(k) ? "us-east-1" : "placeholder";
    }
  }
  return env;
}

async function collect(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolcorpus-"));
  const rec = { package: name };
  try {
    fs.writeFileSync(path.join(dir, "package.json"), '{"name":"toolcorpus-tmp","private":true}');
    await run("npm", ["install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", name], { cwd: dir, timeout: INSTALL_MS });
    const pdir = path.join(dir, "node_modules", ...name.split("/"));
    const pj = JSON.parse(fs.readFileSync(path.join(pdir, "package.json"), "utf8"));
    rec.version = pj.version;
    rec.license = typeof pj.license === "string" ? pj.license : (pj.license?.type ?? null);
    let bin = pj.bin;
    if (typeof bin === "object" && bin) {
      const keys = Object.keys(bin);
      bin = bin[keys.find((k) => /mcp|server/.test(k)) ?? keys[0]];
    }
    if (!bin) bin = pj.main;
    if (!bin) throw new Error("no bin and no main");
    const client = new Client({ name: "toolcorpus", version: "1.0.0" });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [path.join(pdir, bin)],
      cwd: dir,
      env: { ...placeholders(pdir), PATH: process.env.PATH, HOME: dir },
      stderr: "ignore",
    });
    try {
      await withTimeout(client.connect(transport), LIST_MS, "connecting");
      const tools = [];
      let cursor;
      do {
        const r = await withTimeout(client.listTools(cursor ? { cursor } : {}), LIST_MS, "tools/list");
        tools.push(...r.tools);
        cursor = r.nextCursor;
      } while (cursor && tools.length < 5000);
      rec.tools = tools.map((t) => ({ name: t.name, description: t.description ?? "", params: params(t.inputSchema) }));
    } finally {
      await client.close().catch(() => {});
    }
  } catch (e) {
    rec.error = String(e.message ?? e).slice(0, 300);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return rec;
}

const todo = names.filter((n) => !done.has(n));
let next = 0;
async function worker() {
  while (next < todo.length) {
    const name = todo[next++];
    const rec = await collect(name);
    fs.appendFileSync(outFile, JSON.stringify(rec) + "\n");
    console.error(`${name}: ${rec.tools ? rec.tools.length + " tools" : rec.error}`);
  }
}
await Promise.all(Array.from({ length: Number(par) }, worker));
process.exit(0);
