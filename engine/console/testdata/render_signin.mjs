// Renders the Sources screen's sign-ins (frontend/signin.js renderSignIns)
// in Node over the minimal DOM whose HTML sinks throw, and prints the text,
// every tag and attribute name, and the elements with a data-testid. Used
// by TestSignInScreenKeepsDataAsText.
//
// usage: node render_signin.mjs <frontend dir> <input.json>
// input: GET /api/signins
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { FakeElement } from "./fakedom.mjs";

const [dir, inputFile] = process.argv.slice(2);
const { renderSignIns } = await import(pathToFileURL(path.join(dir, "signin.js")).href);
const input = JSON.parse(fs.readFileSync(inputFile, "utf8"));

const tags = new Set();
const attrs = new Set();
const testids = [];
function walk(n) {
  if (n instanceof FakeElement) {
    tags.add(n.tagName);
    for (const a of n.attributes.keys()) attrs.add(a);
    if (n.attributes.has("data-testid")) testids.push({ testid: n.attributes.get("data-testid"), text: n.textContent });
  }
  for (const c of n.childNodes) walk(c);
}
const nodes = renderSignIns(input.signIns, input.readOnly === true);
for (const n of nodes) walk(n);
process.stdout.write(JSON.stringify({ text: nodes.map((n) => n.textContent).join("\n"), tags: [...tags].sort(), attrs: [...attrs].sort(), testids }));
