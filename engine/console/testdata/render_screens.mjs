// Renders the Review, Runs and Sources screens (frontend/review.js,
// runs.js, sources.js) in Node over a minimal DOM whose HTML sinks throw,
// and prints what was built: every tag (SVG ones as svg:name) and
// attribute name, the text of each screen, and each element with a
// data-testid (its attributes and text). Used by TestScreensKeepDataAsText.
//
// usage: node render_screens.mjs <frontend dir> <input.json>
// input: {"inbox": GET /api/review, "runs": GET /api/runs, "run": GET
// /api/runs/{run}, "sources": GET /api/sources}
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const sink = (name) => () => {
  throw new Error(`${name} was used`);
};

class FakeNode {
  constructor() {
    this.childNodes = [];
    this.parentNode = null;
  }
  appendChild(c) {
    if (!(c instanceof FakeNode)) throw new Error(`appendChild of a ${typeof c}: only nodes`);
    c.parentNode = this;
    this.childNodes.push(c);
    return c;
  }
  removeChild(c) {
    this.childNodes = this.childNodes.filter((x) => x !== c);
    c.parentNode = null;
    return c;
  }
  get firstChild() {
    return this.childNodes[0] ?? null;
  }
  get textContent() {
    return this.childNodes.map((c) => c.textContent).join("");
  }
}

class FakeText extends FakeNode {
  constructor(data) {
    super();
    this.data = String(data);
  }
  get textContent() {
    return this.data;
  }
}

class FakeElement extends FakeNode {
  constructor(tag, ns) {
    super();
    this.tagName = ns ? `svg:${tag}` : String(tag).toUpperCase();
    this.attributes = new Map();
  }
  setAttribute(name, value) {
    this.attributes.set(String(name), String(value));
  }
  removeAttribute(name) {
    this.attributes.delete(String(name));
  }
  addEventListener() {}
  focus() {}
}
for (const name of ["innerHTML", "outerHTML"]) {
  Object.defineProperty(FakeElement.prototype, name, { get: sink(name), set: sink(name) });
}
FakeElement.prototype.insertAdjacentHTML = sink("insertAdjacentHTML");

const SVG_NS = "http://www.w3.org/2000/svg";
globalThis.document = {
  createElement: (tag) => new FakeElement(tag),
  createElementNS: (ns, tag) => {
    if (ns !== SVG_NS) throw new Error(`createElementNS in ${ns}`);
    return new FakeElement(tag, ns);
  },
  createTextNode: (data) => new FakeText(data),
  write: sink("document.write"),
  writeln: sink("document.writeln"),
};

const [dir, inputFile] = process.argv.slice(2);
const mod = (name) => import(pathToFileURL(path.join(dir, name)).href);
const { renderReview } = await mod("review.js");
const { renderRunList, renderRunDetail } = await mod("runs.js");
const { renderSources } = await mod("sources.js");
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
for (const n of [...review, ...runList, run, ...sources]) walk(n);
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
    tags: [...tags].sort(),
    attrs: [...attrs].sort(),
    testids,
    refused,
  }),
);
