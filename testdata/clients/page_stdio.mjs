// @modelcontextprotocol/sdk 1.x client over stdio, without elicitation,
// against `capabilities hub serve --stdio`: the hub cannot ask through the
// client, so it opens the approval page itself (CAPABILITIES_BROWSER is
// record_link.mjs, which writes the link to PAGE_LINKS).
//
//   node page_stdio.mjs decide   J2 → awaiting_approval, resume twice (still
//                                pending), then do what the person does in the
//                                page: open the link (cookie), read the session
//                                (CSRF token) and the queue, decide once; then
//                                resume to the end
//   node page_stdio.mjs pending  J2 → awaiting_approval, resume once
//
// Prints one JSON object with what it saw, the page's secrets included (the
// Go test looks for them where the model could read them).
import fs from "node:fs";
import process from "node:process";
import { setTimeout as sleep } from "node:timers/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { bin, j2Code, report, run, textOf, fail } from "./common.mjs";

const [mode] = process.argv.slice(2);
const waitMs = Number(process.env.PAGE_WAIT_MS || 20000);

function result(r) {
  return { text: textOf(r), structured: r.structuredContent, isError: !!r.isError };
}

// The links record_link.mjs wrote so far.
function links() {
  try {
    return fs.readFileSync(process.env.PAGE_LINKS, "utf8").split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

async function waitForLink() {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const l = links();
    if (l.length > 0) return l[0];
    if (Date.now() > deadline) fail(`no link reached the browser in ${waitMs} ms`);
    await sleep(20);
  }
}

// check fails unless the response has status want; returns its JSON.
async function check(res, want, what) {
  const body = await res.text();
  if (res.status !== want) fail(`${what}: status ${res.status}, want ${want}: ${body}`);
  return body ? JSON.parse(body) : null;
}

// The person's part, as the page's scripts do it: the link for the session
// cookie, the session for the CSRF token, the queue, one decision.
async function decideInPage(link, runId) {
  const origin = new URL(link).origin;
  const open = await fetch(link, { redirect: "manual" });
  if (open.status !== 303) fail(`opening the link: status ${open.status}`);
  const cookie = (open.headers.get("set-cookie") || "").split(";")[0];
  if (!cookie) fail("opening the link set no cookie");
  const session = await check(await fetch(origin + "/api/session", { headers: { Cookie: cookie } }), 200, "GET /api/session");
  const queue = await check(await fetch(origin + "/api/approvals", { headers: { Cookie: cookie } }), 200, "GET /api/approvals");
  const call = (queue.approvals || []).find((a) => a.run === runId);
  if (!call) fail(`the page's queue has no call of ${runId}: ${JSON.stringify(queue)}`);
  const decided = await check(
    await fetch(`${origin}/api/approvals/${runId}/${call.id}`, {
      method: "POST",
      headers: { Cookie: cookie, "X-CSRF-Token": session.csrf, Origin: origin, "Content-Type": "application/json" },
      body: JSON.stringify({ choice: "once" }),
    }),
    200,
    "POST the decision",
  );
  const again = await fetch(link, { redirect: "manual" });
  return { cookie, csrf: session.csrf, queue: queue.approvals, decided, linkAgain: again.status };
}

run(async () => {
  const client = new Client({ name: "page-e2e", version: "1.0.0" }, { capabilities: {} });
  const transport = new StdioClientTransport({
    command: bin,
    args: ["hub", "serve", "--stdio"],
    env: { ...process.env },
    stderr: "inherit",
  });
  await client.connect(transport);
  const out = {};
  const j = await client.callTool({ name: "execute", arguments: { code: j2Code } });
  out.j2 = result(j);
  const runId = j.structuredContent?.runId;
  if (!runId) fail("J2 returned no runId: " + JSON.stringify(j));
  out.resume = [result(await client.callTool({ name: "execute", arguments: { resume: runId } }))];
  if (mode === "decide") {
    out.resume.push(result(await client.callTool({ name: "execute", arguments: { resume: runId } })));
    out.link = await waitForLink();
    out.page = await decideInPage(out.link, runId);
    out.final = result(await client.callTool({ name: "execute", arguments: { resume: runId } }));
    out.links = links();
  } else if (mode !== "pending") {
    fail(`unknown mode ${mode}`);
  }
  await client.close();
  report(out);
});
