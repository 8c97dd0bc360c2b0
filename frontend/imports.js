// The Review screen's "From your agents" part: the skills `hub import`
// would bring in from the agents' own skills folders, each with its name
// and description, chosen with a checkbox and imported with one button.
// Rendering only: app.js wires it to the API.
import { h } from "./dom.js";

/** @typedef {import("./api.js").ImportSkill} ImportSkill */

/** @type {Record<string, string>} */
const STATUS = {
  "in-hub": "already in the hub",
  clash: "not imported",
  unreadable: "not a skill the hub can import",
  imported: "imported",
};

/**
 * Renders the skills found in the agents' folders.
 * @param {ImportSkill[]} skills
 * @param {boolean} readOnly a page about one run imports nothing
 * @param {(names: string[]) => void} onImport
 * @returns {HTMLElement[]}
 */
export function renderImports(skills, readOnly, onImport) {
  const fresh = skills.filter((s) => s.status === "import");
  const rest = skills.filter((s) => s.status !== "import");
  /** @type {HTMLInputElement[]} */
  const boxes = [];
  const items = fresh.map((s) => {
    const id = `import-skill-${s.name}`;
    const box = /** @type {HTMLInputElement} */ (h("input", { type: "checkbox", id, "data-skill": s.name, "aria-describedby": `${id}-desc` }));
    box.checked = true;
    box.disabled = readOnly;
    boxes.push(box);
    return h(
      "li",
      { class: "import-skill", "data-testid": "import-skill", "data-skill": s.name },
      box,
      h("label", { for: id, class: "address" }, `skill:${s.name}`),
      h("p", { id: `${id}-desc`, class: "import-desc" }, s.description),
      h("p", { class: "muted" }, `from ${s.harness}: ${s.path}`),
    );
  });
  /** @type {HTMLElement[]} */
  const out = [];
  if (fresh.length === 0) {
    out.push(h("p", { class: "muted", "data-testid": "import-none" }, "No new skills in your agents' skills folders."));
  } else {
    out.push(h("p", null, `Skills in your agents' folders that the hub does not have (${fresh.length}): imported, search and describe show them and hub connect installs them in your other agents.`));
    out.push(h("ul", { class: "plain import-skills" }, ...items));
    const button = /** @type {HTMLButtonElement} */ (h("button", { type: "button", class: "primary", "data-testid": "import-skills", disabled: readOnly ? "" : undefined }, "Import the chosen skills"));
    button.addEventListener("click", () => {
      const names = boxes.filter((b) => b.checked).map((b) => b.dataset.skill ?? "");
      if (names.length > 0) onImport(names);
    });
    out.push(button);
    if (readOnly) out.push(h("p", { class: "muted" }, "This page is about one run: import with capabilities hub console or capabilities hub import."));
  }
  if (rest.length > 0) {
    out.push(
      h(
        "ul",
        { class: "plain muted import-others" },
        ...rest.map((s) =>
          h("li", { "data-testid": "import-other", "data-skill": s.name, "data-status": s.status }, `skill:${s.name} (${s.harness}): ${s.error || STATUS[s.status] || s.status}`),
        ),
      ),
    );
  }
  return out;
}
