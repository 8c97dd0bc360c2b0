// A minimal DOM for rendering the console's screens in Node: elements,
// text nodes and SVG elements, whose HTML sinks (innerHTML, outerHTML,
// insertAdjacentHTML, document.write) throw. Importing it installs
// globalThis.document. Used by render.mjs and render_screens.mjs.
const sink = (name) => () => {
  throw new Error(`${name} was used`);
};

export class FakeNode {
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

export class FakeText extends FakeNode {
  constructor(data) {
    super();
    this.data = String(data);
  }
  get textContent() {
    return this.data;
  }
}

export class FakeElement extends FakeNode {
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

