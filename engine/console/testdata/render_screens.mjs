// Renders the Review, Runs and Sources screens (frontend/review.js,
// runs.js, sources.js) in Node over a minimal DOM whose HTML sinks throw,
// and prints what was built: every tag (SVG ones as svg:name) and
// attribute name, the text of each screen, and each element with a
// data-testid (its attributes and text). Used by TestScreensKeepDataAsText.
//
// usage: node render_screens.mjs <frontend dir> <input.json>
// input: {"inbox": GET /api/review, "runs": GET /api/runs, "run": GET
// /api/runs/{run}, "sources": GET /api/sources, "imports": GET /api/import}
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { FakeElement } from "./fakedom.mjs";

const [dir, inputFile] = process.argv.slice(2);
const mod = (name) => import(pathToFileURL(path.join(dir, name)).href);
const { renderReview } = await mod("review.js");
const { renderRunList, renderRunDetail } = await mod("runs.js");
const { renderSources } = await mod("sources.js");
const { renderImports } = await mod("imports.js");
const { h, svg } = await mod("dom.js");
const input = JSON.parse(fs.readFileSync(inputFile, "utf8"));

const tags = new Set();
const attrs = new Set();
const testids = [];
function walk(n) {
  if (n instanceof FakeElement) {
    tags.add(n.tagName);
    for (const a of n.attributes.keys()) attrs.add(a);
    if (n.attributes.has("data-testid")) {
      testids.push({ testid: n.attributes.get("data-testid"), tag: n.tagName, attrs: Object.fromEntries(n.attributes), text: n.textContent });
    }
  }
  for (const c of n.childNodes) walk(c);
}
const text = (nodes) => nodes.map((n) => n.textContent).join("\n");

const now = Date.now();
const review = renderReview(input.inbox, {}, () => {}).nodes;
const runList = renderRunList(input.runs.runs, input.run.run.id, () => {}, now);
const run = renderRunDetail(input.run, now);
const sources = renderSources(input.sources.sources, now);
const imports = renderImports(input.imports?.skills ?? [], false, () => {});
for (const n of [...review, ...runList, run, ...sources, ...imports]) walk(n);
// What dom.js must refuse: links, handlers, styles, and SVG elements that
// load, link or run something.
const refused = [];
for (const [name, make] of [
  ["h a href", () => h("a", { href: "javascript:alert(1)" })],
  ["h a onclick", () => h("a", { onclick: "alert(1)" })],
  ["svg foreignObject", () => svg("foreignObject")],
  ["svg image", () => svg("image")],
  ["svg rect onload", () => svg("rect", { onload: "alert(1)" })],
  ["svg rect style", () => svg("rect", { style: "fill: red" })],
  ["svg script", () => svg("script")],
  ["svg use", () => svg("use")],
]) {
  try {
    make();
  } catch {
    refused.push(name);
  }
}
process.stdout.write(
  JSON.stringify({
    review: text(review),
    runs: text(runList),
    run: run.textContent,
    sources: text(sources),
    imports: text(imports),
    tags: [...tags].sort(),
    attrs: [...attrs].sort(),
    testids,
    refused,
  }),
);
