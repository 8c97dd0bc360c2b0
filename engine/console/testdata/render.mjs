// Renders the Approval screen's parts (frontend/approval.js) in Node over a
// minimal DOM whose HTML sinks throw, and prints what was built: every tag
// and attribute name, and the text of each rendered item. Used by
// TestRenderKeepsDataAsText: data must come out as text, never as elements.
//
// usage: node render.mjs <frontend dir> <items.json>
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
  constructor(tag) {
    super();
    this.tagName = String(tag).toUpperCase();
    this.attributes = new Map();
  }
  setAttribute(name, value) {
    this.attributes.set(String(name), String(value));
  }
  addEventListener() {}
  focus() {}
}
for (const name of ["innerHTML", "outerHTML"]) {
  Object.defineProperty(FakeElement.prototype, name, { get: sink(name), set: sink(name) });
}
FakeElement.prototype.insertAdjacentHTML = sink("insertAdjacentHTML");

globalThis.document = {
  createElement: (tag) => new FakeElement(tag),
  createTextNode: (data) => new FakeText(data),
  write: sink("document.write"),
  writeln: sink("document.writeln"),
};

const [dir, itemsFile] = process.argv.slice(2);
const { renderApproval, renderQueue } = await import(pathToFileURL(path.join(dir, "approval.js")).href);
const items = JSON.parse(fs.readFileSync(itemsFile, "utf8"));

const tags = new Set();
const attrs = new Set();
function walk(n) {
  if (n instanceof FakeElement) {
    tags.add(n.tagName);
    for (const a of n.attributes.keys()) attrs.add(a);
  }
  for (const c of n.childNodes) walk(c);
}

const now = Date.now();
const out = { cards: [], queue: [] };
items.forEach((item, index) => {
  const { card } = renderApproval(item, { index, total: items.length, now }, () => {}, () => {});
  walk(card);
  out.cards.push(card.textContent);
});
for (const li of renderQueue(items, () => {}, now)) {
  walk(li);
  out.queue.push(li.textContent);
}
out.tags = [...tags].sort();
out.attrs = [...attrs].sort();
process.stdout.write(JSON.stringify(out));
