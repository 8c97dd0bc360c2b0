// DOM building with text only. Data becomes text nodes and attribute
// values; it never becomes markup: no innerHTML, outerHTML,
// insertAdjacentHTML or document.write anywhere in the console (a Go test
// holds this, and the page's Content-Security-Policy requires Trusted Types,
// so the browser refuses a string assigned to an HTML sink).

/** @typedef {Node | string | null | undefined | false} Child */

/** Attributes that could run or load something: never set through h(). */
const UNSAFE = /^(on|href$|src$|srcdoc$|style$|action$|formaction$|xlink:)/i;

/**
 * Creates an element with attributes and children. Strings become text.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, string | boolean | undefined> | null} [attrs]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (UNSAFE.test(name)) {
      throw new Error(`h(): attribute ${name} is not allowed`);
    }
    if (value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/**
 * The SVG elements the screens draw with: shapes and text, never anything
 * that links, loads, animates or embeds (no a, use, image, script,
 * foreignObject, animate or set).
 */
const SVG_TAGS = new Set(["svg", "g", "rect", "line", "title"]);

/**
 * Creates an SVG element with attributes (geometry and class) and children.
 * Same rules as h(): strings become text, no handler, link or style.
 * @param {"svg" | "g" | "rect" | "line" | "title"} tag
 * @param {Record<string, string | number | boolean | undefined> | null} [attrs]
 * @param {...Child} children
 * @returns {SVGElement}
 */
export function svg(tag, attrs, ...children) {
  if (!SVG_TAGS.has(tag)) throw new Error(`svg(): element ${tag} is not allowed`);
  const el = /** @type {SVGElement} */ (document.createElementNS(SVG_NS, tag));
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (UNSAFE.test(name)) {
      throw new Error(`svg(): attribute ${name} is not allowed`);
    }
    if (value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/**
 * Appends children to a parent; strings become text nodes, with the
 * characters that change how text shows written as escapes (visible): a
 * tool's description with a bidi override shows what it holds, "won" is
 * not read as "now".
 * @param {Node} parent
 * @param {Child[]} children
 */
export function append(parent, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === "string" ? document.createTextNode(visible(c)) : c);
  }
}

/**
 * Replaces every child of a parent.
 * @param {Element} parent
 * @param {...Child} children
 */
export function replace(parent, ...children) {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, children);
}

/**
 * Text with the characters that change how it shows without showing
 * themselves (bidi controls, zero-width and tag characters, the soft
 * hyphen, C1 controls) written as \u escapes: "/tmp/\u202egnp.sh" cannot
 * pass for "/tmp/hs.png" in what a person approves. Absent text is "".
 * @param {string | null | undefined} s
 * @returns {string}
 */
export function visible(s) {
  return (s ?? "").replace(/[\p{Cf}\u007f-\u009f]/gu, (c) => {
    const cp = c.codePointAt(0) ?? 0;
    return cp > 0xffff ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, "0")}`;
  });
}
