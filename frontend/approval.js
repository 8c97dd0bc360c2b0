// The Approval screen: one pending call with its four choices, and the
// queue of every call waiting. Rendering only: app.js wires it to the API
// and the keyboard.
import { h, visible } from "./dom.js";

/** @typedef {import("./api.js").Approval} Approval */
/** @typedef {import("./api.js").Choice} Choice */
/** @typedef {import("./api.js").Interrupted} Interrupted */
/** @typedef {{label: string, key: string, hint: string}} ChoiceText */

/** @type {Record<Choice, ChoiceText>} */
const CHOICES = {
  once: { label: "Allow once", key: "o", hint: "this call runs" },
  run: { label: "Allow for this run", key: "r", hint: "this tool runs for the rest of the run" },
  always: { label: "Always allow", key: "a", hint: "a rule allows this version of the tool from now on" },
  deny: { label: "Deny", key: "d", hint: "the call fails inside the code" },
};

/** A call that was in flight when the hub stopped: retry or skip. */
/** @type {Record<Choice, ChoiceText>} */
const IN_FLIGHT = {
  ...CHOICES,
  once: { label: "Retry", key: "o", hint: "make the call again" },
  deny: { label: "Skip", key: "d", hint: "the code gets ToolError skipped_in_flight" },
};

/**
 * The words of a choice for an item.
 * @param {Approval} item
 * @param {Choice} choice
 * @returns {ChoiceText}
 */
export function choiceText(item, choice) {
  return (item.kind === "in_flight" ? IN_FLIGHT : CHOICES)[choice];
}

/** A key held down, or pressed twice, must not decide the next call too:
 * shortcuts wait this long (ms) after a call is shown. */
export const SETTLE_MS = 300;

/** A key pressed while they wait makes them wait this long again after it:
 * a window that came up while the person was typing elsewhere takes no
 * decision from the words they go on typing. */
export const SETTLE_AFTER_KEY_MS = 1000;

/**
 * When a call's shortcuts work, after a key pressed at now.
 * @param {number} armedAt when they were to work
 * @param {number} now
 * @returns {number} the new time, armedAt itself when the key came after it
 */
export function afterKey(armedAt, now) {
  return now < armedAt ? now + SETTLE_AFTER_KEY_MS : armedAt;
}

/**
 * Whether Enter (and the card's first focus) allows the call once. Not for
 * a call whose tool may destroy data, nor for one that was in flight and
 * may already have happened: the person says which with its key or a
 * click, as `hub approve` has no default either.
 * @param {Approval} item
 * @returns {boolean}
 */
export function enterAllows(item) {
  return item.effect !== "destructive" && item.kind !== "in_flight" && item.choices.includes("once");
}

/**
 * Which choice a key means for an item, or null. Enter is once where
 * that is the safe default (enterAllows).
 * @param {Approval} item
 * @param {string} key
 * @returns {Choice | null}
 */
export function choiceForKey(item, key) {
  if (key === "Enter") return enterAllows(item) ? "once" : null;
  const k = key.toLowerCase();
  for (const c of item.choices) {
    if (choiceText(item, c).key === k) return c;
  }
  return null;
}

/**
 * The arguments as the person reads them.
 * @param {unknown} args
 * @returns {string}
 */
export function formatArgs(args) {
  if (args === undefined || args === null) return "(none)";
  if (typeof args === "string") return visible(args);
  return visible(JSON.stringify(args, null, 2));
}

/**
 * How long until an expiry, in words.
 * @param {string | undefined} iso
 * @param {number} now milliseconds since the epoch
 * @returns {string}
 */
export function expiresIn(iso, now) {
  if (!iso) return "does not expire";
  const ms = Date.parse(iso) - now;
  if (Number.isNaN(ms)) return "";
  if (ms <= 0) return "expired";
  if (ms < 60000) return "expires in under a minute";
  const min = Math.ceil(ms / 60000);
  if (min < 60) return `expires in ${min} min`;
  const hours = Math.floor(min / 60);
  return `expires in ${hours} h ${min % 60} min`;
}

/**
 * Renders one pending call with its choices.
 * @param {Approval} item
 * @param {{index: number, total: number, now: number}} where
 * @param {(choice: Choice) => void} onChoose
 * @param {() => void} onClose
 * @param {Node | null} [notice] what the last decision did, shown above the next call
 * @param {(item: Approval) => Promise<unknown>} [readAll] reads the whole arguments
 *   when the preview shortened them (item.argsSize)
 * @returns {{card: HTMLElement, first: HTMLElement | null}}
 */
export function renderApproval(item, where, onChoose, onClose, notice, readAll) {
  const flight = item.kind === "in_flight";
  const buttons = item.choices.map((c) => {
    const t = choiceText(item, c);
    const b = h(
      "button",
      { type: "button", class: `choice choice-${c}`, "aria-keyshortcuts": t.key.toUpperCase(), "data-choice": c },
      h("span", { class: "choice-label" }, t.label),
      h("kbd", null, t.key),
      h("span", { class: "choice-hint" }, t.hint),
    );
    b.addEventListener("click", () => onChoose(c));
    return b;
  });
  const args = h("pre", { class: "args", tabindex: "0", "aria-label": "Arguments" }, formatArgs(item.args));
  // Long values are shortened in the preview; the person can read them all.
  const all =
    item.argsSize && readAll
      ? h("button", { type: "button", class: "show-all" }, `Show all the arguments (${item.argsSize} bytes)`)
      : null;
  all?.addEventListener("click", async () => {
    all.disabled = true;
    try {
      args.textContent = formatArgs(await readAll?.(item));
      all.remove();
    } catch (e) {
      all.textContent = visible(`Could not read them: ${e instanceof Error ? e.message : String(e)}`);
    }
  });
  const title = h("h2", { id: "approval-title", class: "address", tabindex: "-1" }, item.address);
  const close = h("button", { type: "button", class: "close", "aria-label": "Close (Esc)" }, "Close");
  close.addEventListener("click", onClose);
  const card = h(
    "article",
    { class: "card" },
    h(
      "header",
      { class: "card-head" },
      h("p", { class: "muted position" }, positionText(item, where.index, where.total)),
      close,
    ),
    notice ? h("div", { class: "status" }, notice) : null,
    title,
    flight ? h("p", { class: "warn" }, "This call was in flight when the hub stopped: it may already have happened.") : null,
    item.effect === "destructive" ? h("p", { class: "warn" }, "This tool may destroy data (it does not say it is safe).") : null,
    h("p", { class: "summary" }, visible(item.summary) || "(the tool has no description)"),
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "Connection"),
      h("dd", null, visible(item.connection)),
      h("dt", null, "Why it asks"),
      h("dd", null, visible(item.message)),
      h("dt", null, "Expiry"),
      h("dd", null, expiresIn(item.expiresAt, where.now)),
    ),
    item.changes?.length ? h("h3", null, "What changed since it was reviewed") : null,
    item.changes?.length ? h("pre", { class: "changes", tabindex: "0", "aria-label": "What changed" }, visible(item.changes.join("\n"))) : null,
    h("h3", null, "Arguments"),
    args,
    all,
    h("div", { class: "choices", role: "group", "aria-label": "Your decision" }, ...buttons),
  );
  // The first focus: "Allow once" where Enter may allow it, else the
  // call's address (Enter there decides nothing).
  const once = enterAllows(item) ? (buttons[item.choices.indexOf("once")] ?? null) : null;
  if (once) once.setAttribute("autofocus", "");
  return { card, first: once ?? title };
}

/**
 * Where a call stands in the queue, as its card's head says it.
 * @param {Approval} item
 * @param {number} index
 * @param {number} total
 * @returns {string}
 */
export function positionText(item, index, total) {
  return `Call ${index + 1} of ${total} · run ${item.run} · ${item.id}`;
}

/**
 * Renders the queue: one entry per pending call.
 * @param {Approval[]} items
 * @param {(item: Approval) => void} onOpen
 * @param {number} now
 * @returns {HTMLLIElement[]}
 */
export function renderQueue(items, onOpen, now) {
  return items.map((item) => {
    const b = h(
      "button",
      { type: "button", class: "queue-item" },
      h("span", { class: "address" }, item.address),
      h("span", { class: "summary" }, visible(item.summary)),
      h("span", { class: "muted" }, `${item.id} of run ${item.run} · ${expiresIn(item.expiresAt, now)}`),
    );
    b.addEventListener("click", () => onOpen(item));
    return h("li", null, b);
  });
}

/**
 * Renders what a decision did and what happens next.
 * @param {string} label
 * @param {string} address
 * @param {string} next
 * @returns {HTMLElement}
 */
export function renderDecided(label, address, next) {
  return h("div", { class: "decided" }, h("p", null, h("strong", null, `${label}: `), address), h("p", null, next));
}

/**
 * Renders the interrupted runs: each with what was in flight, Resume and
 * Cancel.
 * @param {Interrupted[]} runs
 * @param {(run: string, what: "resume" | "cancel") => void} onAct
 * @returns {HTMLLIElement[]}
 */
export function renderInterrupted(runs, onAct) {
  return runs.map((r) => {
    const resume = h("button", { type: "button", class: "run-resume", "data-run": r.run }, "Resume");
    const cancel = h("button", { type: "button", class: "run-cancel", "data-run": r.run }, "Cancel run");
    resume.addEventListener("click", () => onAct(r.run, "resume"));
    cancel.addEventListener("click", () => onAct(r.run, "cancel"));
    const flight = r.inFlight.length
      ? `In flight when it stopped (may have happened; resuming asks about it): ${r.inFlight.map(visible).join(", ")}`
      : "No call was in flight when it stopped.";
    return h(
      "li",
      { class: "interrupted-run" },
      h("span", { class: "address" }, `Run ${r.run}`),
      h("span", { class: "summary" }, flight),
      h("span", { class: "muted" }, `${r.attempts} attempt(s) · last written ${new Date(r.updatedAt).toLocaleString()}`),
      h("div", { class: "choices", role: "group", "aria-label": `What to do with run ${r.run}` }, resume, cancel),
    );
  });
}
