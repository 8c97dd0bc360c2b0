#!/usr/bin/env node
// Drives the console page in a real headless Chromium for the Go tests
// (cmd/capabilities/browser_test.go), through playwright-core, and can be
// an MCP client without elicitation over stdio (@modelcontextprotocol/sdk),
// so the hub opens the page itself. One browser for the whole test; the
// test sends one JSON command per line on stdin and reads one JSON answer
// per line on stdout: {"ok": true, ...} or {"ok": false, "error": "..."}.
// The first line out says the browser is ready (its version).
//
// Environment:
//   BROWSER_EXECUTABLE  the Chromium to start (Debian's chromium-headless-shell)
//   NODE_MODULES        testdata/npm/node_modules (playwright-core, the MCP SDK)
//   BROWSER_TIMEOUT_MS  how long a wait may take (the test scales it on a slow machine)
//
// Commands (op and its fields):
//   open {url, tab?}     goes to the one-time link (in a new tab, with tab),
//                        waits for the page
//   closeTab             closes the current tab; the first one is current again
//   reload               loads the page again; answers its paint times
//   dialog {run?, not?, want?}  waits for the open approval dialog (about
//                        run, when given; about another call than the "not"
//                        text, when given; whose texts hold want's, when
//                        given: {notice: ["…", …], …}, the answer's field
//                        names) and answers its texts
//   closed {status?}     waits until no dialog is open (and the page's status
//                        holds the text, when given); answers the status text
//   choose {choice?, keys?}  decides the open call: a click on the choice's
//                        button, or the keys pressed in turn (after the page's
//                        300 ms settle time); answers the POST's status and
//                        body, and how long from the click or last key until
//                        the answer arrived (ms, the page's own clock)
//   screenshot {path, width, height, scheme, scrollTo?}  (scrollTo: a selector
//                        scrolled into view first)
//   click {selector}     clicks the element
//   hash {hash}          sets the page's location.hash (the page follows it)
//   hold {path}          holds the page's GETs of the path (its reads of the
//                        queue) until release: the page cannot learn of a
//                        change meanwhile
//   release {path}       lets them go
//   press {keys}         presses the keys in turn
//   text {selector, contains?, exact?}  waits for the element (holding the
//                        text, or whose trimmed text is exact, when given) and
//                        answers its text
//   count {selector, want?}  how many elements match (once want match, when
//                        given; else, at the timeout, how many do)
//   errors               the console errors and page errors seen so far
//   mcpConnect {command, args, env}  starts the MCP server over stdio as a
//                        client with no capabilities (so no elicitation)
//   execute {code? | resume?}  calls the execute tool; answers its
//                        structuredContent and text
//   mcpClose
//   close
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";

const require = createRequire(path.join(process.env.NODE_MODULES || ".", "noop.js"));
const { chromium } = require("playwright-core");
const timeout = Number(process.env.BROWSER_TIMEOUT_MS || 15000);

const browser = await chromium.launch({
  executablePath: process.env.BROWSER_EXECUTABLE,
  headless: true,
  timeout,
});
const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "light" });
context.setDefaultTimeout(timeout);

// The moment of the person's last click or key, in the page's clock, so a
// decision's time is measured from the event and not from the driver.
await context.addInitScript(() => {
  const mark = () => {
    /** @type {any} */ (window).__actedAt = performance.now();
  };
  addEventListener("click", mark, true);
  addEventListener("keydown", mark, true);
});

/** @type {string[]} */
const errors = [];
/** @type {import("playwright-core").Page[]} */
const tabs = [];
async function newTab() {
  const p = await context.newPage();
  p.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()}`);
  });
  p.on("pageerror", (e) => errors.push(`page: ${e.message}`));
  tabs.push(p);
  return p;
}
let page = await newTab();
/** @type {any} */
let mcp = null;
/** The held GETs, by path (hold, release). @type {Map<string, {matcher: (url: URL) => boolean, routes: import("playwright-core").Route[]}>} */
const holds = new Map();

/** The paint times of the page's last load, in ms from its navigation start. */
async function paints() {
  return page.evaluate(
    () =>
      new Promise((resolve) => {
        const out = /** @type {Record<string, number>} */ ({});
        const done = () => resolve(out);
        const take = () => {
          for (const e of performance.getEntriesByType("paint")) out[e.name] = e.startTime;
          if (out["first-contentful-paint"] !== undefined) done();
        };
        take();
        new PerformanceObserver(take).observe({ type: "paint", buffered: true });
        setTimeout(done, 2000);
      }),
  );
}

async function waitPage() {
  await page.locator("#queue-title").waitFor({ state: "attached" });
  // The page has read the session and the queue once.
  await page.waitForFunction(() => document.getElementById("empty")?.textContent !== "Loading…");
}

const ops = {
  async open({ url, tab }) {
    if (tab) page = await newTab();
    const resp = await page.goto(url);
    await waitPage();
    return { status: resp?.status(), url: page.url(), paints: await paints() };
  },
  async closeTab() {
    if (tabs.length < 2) throw new Error("closeTab: only one tab");
    await /** @type {import("playwright-core").Page} */ (tabs.pop()).close();
    page = tabs[tabs.length - 1];
    return {};
  },
  async reload() {
    await page.reload();
    await waitPage();
    return { paints: await paints() };
  },
  async dialog({ run, not, want }) {
    // The texts are read in the same check that finds them as wanted: a
    // notice the page writes after the dialog opens is waited for.
    const shown = await page.waitForFunction(
      ([run, not, want]) => {
        const d = document.querySelector("dialog#approval");
        if (!(d instanceof HTMLDialogElement) || !d.open) return false;
        const head = d.querySelector(".card-head")?.textContent ?? "";
        if ((run && !head.includes(run)) || (not && head === not)) return false;
        const text = (/** @type {string} */ sel) => d.querySelector(sel)?.textContent ?? "";
        /** @type {Record<string, any>} */
        const texts = {
          head: text(".card-head p"),
          address: text("#approval-title"),
          summary: text(".summary"),
          args: text(".args"),
          notice: text(".status"),
          choices: [...d.querySelectorAll("button.choice")].map((b) => b.getAttribute("data-choice")),
          focused: document.activeElement?.getAttribute("data-choice") ?? document.activeElement?.tagName ?? "",
        };
        for (const [field, parts] of Object.entries(want || {})) {
          if (!parts.every((/** @type {string} */ p) => String(texts[field]).includes(p))) return false;
        }
        return texts;
      },
      [run, not, want],
    );
    return shown.jsonValue();
  },
  async closed({ status }) {
    await page.waitForFunction(
      (status) =>
        !(/** @type {HTMLDialogElement} */ (document.querySelector("dialog#approval")).open) &&
        (!status || (document.getElementById("status")?.textContent ?? "").includes(status)),
      status,
    );
    return {
      status: (await page.textContent("#status")) ?? "",
      empty: (await page.isVisible("#empty")) ? ((await page.textContent("#empty")) ?? "") : "",
    };
  },
  async choose({ choice, keys }) {
    const answered = page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname.startsWith("/api/approvals/"));
    if (keys) {
      // Shortcuts are ignored for 300 ms after a call is shown; the dialog
      // says when they work (however slow the machine).
      await page.locator('dialog#approval[data-armed="true"]').waitFor({ state: "attached" });
      for (const k of keys) await page.keyboard.press(k);
    } else {
      await page.click(`dialog#approval button[data-choice="${choice}"]`);
    }
    const resp = await answered;
    const body = await resp.json();
    const pathname = new URL(resp.url()).pathname;
    const timing = await page.evaluate((pathname) => {
      const acted = /** @type {any} */ (window).__actedAt;
      const entries = performance.getEntriesByType("resource").filter((e) => new URL(e.name).pathname === pathname);
      const e = /** @type {PerformanceResourceTiming} */ (entries[entries.length - 1]);
      return { toResponse: e ? e.responseEnd - acted : -1 };
    }, pathname);
    return { status: resp.status(), body, path: pathname, ...timing };
  },
  async screenshot({ path: file, width, height, scheme, scrollTo }) {
    await page.setViewportSize({ width, height });
    await page.emulateMedia({ colorScheme: scheme });
    if (scrollTo) await page.locator(scrollTo).first().scrollIntoViewIfNeeded();
    // Two frames: the layout and colours of the new size are painted.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    await page.screenshot({ path: file });
    return {};
  },
  async click({ selector }) {
    await page.click(selector);
    return {};
  },
  async attached({ selector }) {
    await page.locator(selector).first().waitFor({ state: "attached" });
    return {};
  },
  async fill({ selector, value }) {
    await page.fill(selector, value);
    return {};
  },
  async select({ selector, value }) {
    await page.selectOption(selector, value);
    return {};
  },
  async hash({ hash }) {
    await page.evaluate((h) => {
      location.hash = h;
    }, hash);
    return {};
  },
  async hold({ path: held }) {
    /** @type {import("playwright-core").Route[]} */
    const routes = [];
    const matcher = (/** @type {URL} */ url) => url.pathname === held;
    holds.set(held, { matcher, routes });
    await page.route(matcher, (route) => {
      if (route.request().method() !== "GET" || !holds.has(held)) return route.continue();
      routes.push(route);
    });
    return {};
  },
  async release({ path: held }) {
    const h = holds.get(held);
    if (!h) throw new Error(`release: ${held} is not held`);
    holds.delete(held); // from now on the handler lets them through
    for (const r of h.routes) await r.continue();
    await page.unroute(h.matcher);
    return { released: h.routes.length };
  },
  async press({ keys }) {
    for (const k of keys) await page.keyboard.press(k);
    return {};
  },
  async text({ selector, contains, exact }) {
    const escaped = (/** @type {string} */ s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const has = exact !== undefined ? { hasText: new RegExp("^\\s*" + escaped(exact) + "\\s*$") } : contains ? { hasText: contains } : {};
    const el = page.locator(selector, has).first();
    await el.waitFor();
    return { text: (await el.textContent()) ?? "" };
  },
  async count({ selector, want }) {
    if (want !== undefined) {
      await page
        .waitForFunction(([selector, want]) => document.querySelectorAll(selector).length === want, [selector, want])
        .catch(() => {}); // at the timeout: how many there are
    }
    return { count: await page.locator(selector).count() };
  },
  async errors() {
    return { errors };
  },
  async mcpConnect({ command, args, env }) {
    const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
    mcp = new Client({ name: "browser-journeys", version: "1.0.0" }, { capabilities: {} });
    await mcp.connect(new StdioClientTransport({ command, args, env, stderr: "inherit" }));
    return {};
  },
  async execute({ code, resume }) {
    const r = await mcp.callTool({ name: "execute", arguments: resume ? { resume } : { code } });
    const text = (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
    return { structured: r.structuredContent, text, isError: !!r.isError };
  },
  async mcpClose() {
    await mcp?.close();
    mcp = null;
    return {};
  },
  async close() {
    await browser.close();
    return {};
  },
};

const out = (v) => process.stdout.write(JSON.stringify(v) + "\n");
out({ ok: true, version: browser.version() });

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.trim() === "") continue;
  let cmd;
  try {
    cmd = JSON.parse(line);
    const op = ops[cmd.op];
    if (!op) throw new Error(`unknown op ${cmd.op}`);
    out({ ok: true, ...(await op(cmd)) });
  } catch (e) {
    out({ ok: false, error: String(e && e.stack ? e.stack : e) });
  }
  if (cmd && cmd.op === "close") break;
}
await mcp?.close().catch(() => {});
await browser.close().catch(() => {});
