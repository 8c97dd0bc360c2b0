// The Review screen: new and changed tools in the three groups `hub review`
// shows (read-only, writes, destructive), with what changed since the
// reviewed contract, the commands sources run, and reviewed tools their
// source no longer lists. One key (a) accepts what is shown. Rendering
// only: app.js wires it to the API and the keyboard.
import { h, visible } from "./dom.js";

/** @typedef {import("./api.js").Inbox} Inbox */
/** @typedef {import("./api.js").ReviewItem} ReviewItem */
/** @typedef {import("./api.js").Action} Action */
/** @typedef {import("./api.js").Effect} Effect */

/** The groups, in the order and words of `hub review`. */
/** @type {{effect: Effect, title: string}[]} */
export const GROUPS = [
  { effect: "read", title: "Read-only (proposed: allow)" },
  { effect: "write", title: "Writes (proposed: ask)" },
  { effect: "destructive", title: "Destructive or unannotated (proposed: ask)" },
];

/** @type {Action[]} */
const ACTIONS = ["allow", "ask", "deny"];

/**
 * How many things the inbox shows.
 * @param {Inbox} inbox
 * @returns {number}
 */
export function reviewCount(inbox) {
  return inbox.items.length + (inbox.commands ?? []).length + (inbox.removed ?? []).length;
}

/**
 * One line of what the inbox holds, as `hub review` heads it.
 * @param {Inbox} inbox
 * @returns {string}
 */
export function reviewHeadline(inbox) {
  const news = inbox.items.filter((it) => it.status === "new").length;
  const changed = inbox.items.length - news;
  const parts = [`${news} new and ${changed} changed tool(s)`];
  const removed = (inbox.removed ?? []).length;
  const commands = (inbox.commands ?? []).length;
  if (removed > 0) parts.push(`${removed} removed`);
  if (commands > 0) parts.push(`${commands} command(s) to consent to`);
  return `Review: ${parts.join(", ")}`;
}

/**
 * A contract diff as lines, added and removed lines marked.
 * @param {string[]} changes
 * @returns {HTMLPreElement}
 */
function renderChanges(changes) {
  const lines = changes.flatMap((c) => c.split("\n"));
  return h(
    "pre",
    { class: "diff", tabindex: "0", "aria-label": "What changed", "data-testid": "review-changes" },
    ...lines.map((l) => {
      const t = l.trimStart();
      const cls = t.startsWith("+ ") || t === "+" ? "diff-add" : t.startsWith("- ") || t === "-" ? "diff-del" : "diff-ctx";
      return h("span", { class: cls }, `${visible(l)}\n`);
    }),
  );
}

/**
 * What a rule on the whole source does to a tool once it is reviewed.
 * @param {{target: string, action: Action}} r
 * @returns {string}
 */
function sourceRuleText(r) {
  const what = { allow: "runs without asking", deny: "is denied", ask: "asks" }[r.action];
  return `Once reviewed, it ${what}: the rule for the whole source ${r.target} says ${r.action}.`;
}

/**
 * One tool awaiting review.
 * @param {ReviewItem} it
 * @param {Record<string, Action>} actions the person's choice per address (changed in place)
 * @param {boolean} readOnly
 * @param {number} n a number unique on the page, for ids
 * @returns {HTMLLIElement}
 */
function renderItem(it, actions, readOnly, n) {
  const selectId = `review-action-${n}`;
  const select = h(
    "select",
    { id: selectId, class: "action", "data-testid": "review-action", disabled: readOnly },
    ...ACTIONS.map((a) => h("option", { value: a, selected: a === (actions[it.address] ?? it.proposal) }, a === it.proposal ? `${a} (proposed)` : a)),
  );
  select.addEventListener("change", () => {
    actions[it.address] = /** @type {Action} */ (select.value);
  });
  return h(
    "li",
    { class: `review-item effect-${it.effect}`, "data-testid": "review-item", "data-address": it.address, "data-status": it.status },
    h(
      "div",
      { class: "review-head" },
      h("span", { class: "address" }, it.address),
      h("span", { class: `badge status-${it.status}` }, it.status),
      it.effect === "destructive" ? h("span", { class: "badge flag" }, "! destructive") : null,
    ),
    it.title ? h("p", { class: "title" }, visible(it.title)) : null,
    h("p", { class: "summary" }, visible(it.summary) || "(the tool has no description)"),
    it.sourceRule ? h("p", { class: "source-rule", "data-testid": "review-source-rule" }, sourceRuleText(it.sourceRule)) : null,
    it.changes && it.changes.length > 0 ? renderChanges(it.changes) : null,
    h("details", { class: "description" }, h("summary", null, "Full description"), h("p", { class: "pre-line" }, visible(it.description) || "(none)")),
    h("div", { class: "review-action" }, h("label", { for: selectId }, "Rule: "), select),
  );
}

/**
 * Renders the inbox. `actions` collects the person's per-tool choices; the
 * acceptance sends them with exactly the contracts shown.
 * @param {Inbox} inbox
 * @param {Record<string, Action>} actions
 * @param {() => void} onAccept
 * @returns {{nodes: HTMLElement[], accept: HTMLButtonElement | null}}
 */
export function renderReview(inbox, actions, onAccept) {
  const readOnly = inbox.readOnly === true;
  /** @type {HTMLElement[]} */
  const nodes = [];
  if (reviewCount(inbox) === 0) {
    nodes.push(h("p", { id: "review-empty", class: "muted" }, "Nothing to review."));
    return { nodes, accept: null };
  }
  nodes.push(h("p", { id: "review-headline", class: "headline" }, reviewHeadline(inbox)));
  let n = 0;
  const commands = inbox.commands ?? [];
  if (commands.length > 0) {
    nodes.push(
      h(
        "section",
        { class: "review-group", "data-testid": "review-commands", "aria-label": "Commands" },
        h("h3", null, "Commands these sources run on this machine (accepting consents to them)"),
        h(
          "ul",
          { class: "plain" },
          ...commands.map((c) => h("li", { "data-testid": "review-command", "data-namespace": c.namespace }, h("span", { class: "address" }, `${c.namespace}: `), h("code", null, c.shown || c.command))),
        ),
      ),
    );
  }
  for (const g of GROUPS) {
    const items = inbox.items.filter((it) => it.effect === g.effect);
    if (items.length === 0) continue;
    nodes.push(
      h(
        "section",
        { class: "review-group", "data-testid": `review-group-${g.effect}`, "aria-label": g.title },
        h("h3", null, `${g.title} · ${items.length}`),
        h("ol", { class: "plain review-items" }, ...items.map((it) => renderItem(it, actions, readOnly, n++))),
      ),
    );
  }
  const removed = inbox.removed ?? [];
  if (removed.length > 0) {
    nodes.push(
      h(
        "section",
        { class: "review-group", "data-testid": "review-removed", "aria-label": "Removed" },
        h("h3", null, `Removed from their source (accepting forgets their review and rules) · ${removed.length}`),
        h(
          "ol",
          { class: "plain review-items" },
          ...removed.map((r) =>
            h(
              "li",
              { class: "review-item removed", "data-testid": "review-removed-item", "data-address": r.address },
              h("div", { class: "review-head" }, h("span", { class: "address" }, r.address), h("span", { class: "badge status-removed" }, "removed")),
              h("p", { class: "summary" }, visible(r.description) || "(its reviewed description was not kept)"),
            ),
          ),
        ),
      ),
    );
  }
  if (readOnly) {
    nodes.push(h("p", { class: "warn", id: "review-readonly" }, "This page is about one run: review tools with `capabilities hub console` or `capabilities hub review`."));
    return { nodes, accept: null };
  }
  const accept = h(
    "button",
    { type: "button", id: "review-accept", class: "primary", "aria-keyshortcuts": "A" },
    h("span", null, "Accept what is shown"),
    " ",
    h("kbd", null, "a"),
  );
  accept.addEventListener("click", onAccept);
  nodes.push(h("div", { class: "actions" }, accept, h("p", { class: "muted" }, "Accepts every tool above at the version shown, with the rule chosen for it, the commands shown, and forgets the removed tools. If anything changed since, nothing is accepted and the inbox reloads.")));
  return { nodes, accept };
}
