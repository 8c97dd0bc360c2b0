// Renders the Approval screen's parts (frontend/approval.js) in Node over a
// minimal DOM whose HTML sinks throw, and prints what was built: every tag
// and attribute name, and the text of each rendered item. Used by
// TestRenderKeepsDataAsText: data must come out as text, never as elements.
//
// usage: node render.mjs <frontend dir> <items.json>
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { FakeElement } from "./fakedom.mjs";

const [dir, itemsFile] = process.argv.slice(2);
const { SETTLE_MS, afterKey, choiceForKey, renderApproval, renderQueue } = await import(pathToFileURL(path.join(dir, "approval.js")).href);
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
const out = { cards: [], queue: [], enter: [], first: [] };
items.forEach((item, index) => {
  const { card, first } = renderApproval(item, { index, total: items.length, now }, () => {}, () => {});
  walk(card);
  out.cards.push(card.textContent);
  // What Enter decides, and what has the focus when the card opens.
  out.enter.push(choiceForKey(item, "Enter"));
  out.first.push(first ? first.attributes.get("data-choice") || first.tagName.toLowerCase() : null);
});
for (const li of renderQueue(items, () => {}, now)) {
  walk(li);
  out.queue.push(li.textContent);
}
// A person typing elsewhere when the call opens at 0: a key every 200 ms
// from 100 to 1900, then a pause; when do the shortcuts work?
let armedAt = SETTLE_MS;
for (let t = 100; t < 2000; t += 200) armedAt = afterKey(armedAt, t);
out.armedAfterTyping = armedAt;
out.armedAfterLateKey = afterKey(SETTLE_MS, SETTLE_MS + 50);
out.tags = [...tags].sort();
out.attrs = [...attrs].sort();
process.stdout.write(JSON.stringify(out));
