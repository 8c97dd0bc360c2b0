// The console page: the Approval screen over the console API. Plain ES
// modules, no build step.
import { APIError, decide, get, setCSRF } from "./api.js";
import { choiceForKey, choiceText, renderApproval, renderDecided, renderQueue } from "./approval.js";
import { replace } from "./dom.js";

/** @typedef {import("./api.js").Approval} Approval */
/** @typedef {import("./api.js").Choice} Choice */
/** @typedef {import("./api.js").Session} Session */

const POLL_MS = 3000;
// A key held down, or pressed twice, must not decide the next call too:
// shortcuts wait this long after a call is shown.
const SETTLE_MS = 300;

/**
 * @template {HTMLElement} T
 * @param {string} id
 * @param {new () => T} type
 * @returns {T}
 */
function byId(id, type) {
  const el = document.getElementById(id);
  if (!(el instanceof type)) throw new Error(`the page has no #${id}`);
  return el;
}

const ui = {
  queue: byId("queue", HTMLOListElement),
  empty: byId("empty", HTMLParagraphElement),
  status: byId("status", HTMLDivElement),
  error: byId("error", HTMLParagraphElement),
  expiry: byId("expiry", HTMLParagraphElement),
  dialog: byId("approval", HTMLDialogElement),
};

const state = {
  /** @type {Approval[]} */
  queue: [],
  /** @type {Approval | null} */
  current: null,
  busy: false,
  // The next call opens by itself on load and after a decision; Esc stops
  // that until the person opens one.
  autoOpen: true,
  stopped: false,
  shownAt: 0,
  // What the last decision did, for the next call's card.
  /** @type {{label: string, address: string, next: string} | null} */
  decided: null,
  /** @type {number | undefined} */
  timer: undefined,
};

/** @param {Approval} a @param {Approval} b */
const same = (a, b) => a.run === b.run && a.id === b.id;

/** @param {string} msg */
function showError(msg) {
  ui.error.textContent = msg;
  ui.error.hidden = msg === "";
}

/**
 * Stops the page for good (expired, or the session is gone).
 * @param {string} msg
 */
function stop(msg) {
  state.stopped = true;
  if (state.timer !== undefined) clearInterval(state.timer);
  if (ui.dialog.open) ui.dialog.close();
  replace(ui.queue);
  ui.empty.hidden = false;
  ui.empty.textContent = "";
  showError(msg);
}

/** @param {unknown} err */
function failed(err) {
  if (err instanceof APIError && (err.status === 401 || err.status === 410)) {
    stop(err.message);
    return;
  }
  showError(err instanceof Error ? err.message : String(err));
}

function renderList() {
  const now = Date.now();
  replace(ui.queue, ...renderQueue(state.queue, open, now));
  ui.empty.hidden = state.queue.length > 0;
  ui.empty.textContent = "Nothing waits for a decision.";
  document.title = state.queue.length > 0 ? `(${state.queue.length}) Capabilities: approvals` : "Capabilities: approvals";
}

/** @param {Approval} item */
function open(item) {
  state.autoOpen = true;
  show(item);
}

/** @param {Approval} item */
function show(item) {
  state.current = item;
  const index = Math.max(0, state.queue.findIndex((q) => same(q, item)));
  const d = state.decided;
  state.decided = null;
  const notice = d ? renderDecided(d.label, d.address, d.next) : null;
  const where = { index, total: state.queue.length, now: Date.now() };
  const { card, first } = renderApproval(item, where, (c) => choose(item, c), dismiss, notice);
  replace(ui.dialog, card);
  state.shownAt = performance.now();
  if (!ui.dialog.open) ui.dialog.showModal();
  if (first) first.focus();
}

function closeDialog() {
  state.current = null;
  if (ui.dialog.open) ui.dialog.close();
}

// The person closed the call without deciding (Close or Esc): it stays in
// the queue, and no call opens by itself until the person opens one.
function dismiss() {
  state.autoOpen = false;
  closeDialog();
}

/**
 * Records a decision, says what happens next, and opens the next call.
 * @param {Approval} item
 * @param {Choice} choice
 */
async function choose(item, choice) {
  if (state.busy || state.stopped) return;
  state.busy = true;
  for (const b of ui.dialog.querySelectorAll("button")) b.disabled = true;
  try {
    const d = await decide(item, choice);
    showError("");
    const label = choiceText(item, choice).label;
    replace(ui.status, renderDecided(label, item.address, d.next));
    state.decided = { label, address: item.address, next: d.next };
    state.queue = state.queue.filter((q) => !same(q, item));
    state.autoOpen = true;
    closeDialog();
    await refresh();
  } catch (err) {
    failed(err);
    closeDialog();
    await refresh();
  } finally {
    state.busy = false;
  }
}

/** Reads the queue again and keeps the screen in step with it. */
async function refresh() {
  if (state.stopped) return;
  try {
    const { approvals } = await get("/api/approvals").then((v) => /** @type {{approvals: Approval[]}} */ (v));
    state.queue = approvals;
  } catch (err) {
    failed(err);
    return;
  }
  renderList();
  const cur = state.current;
  if (ui.dialog.open && cur && !state.queue.some((q) => same(q, cur))) {
    closeDialog();
    replace(ui.status, renderDecided("No longer waiting", cur.address, "This call was decided elsewhere or expired."));
  }
  if (!ui.dialog.open && state.autoOpen && state.queue.length > 0) {
    show(state.queue[0]);
  }
  state.decided = null;
}

ui.dialog.addEventListener("keydown", (ev) => {
  const item = state.current;
  if (!item || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const settling = state.busy || ev.repeat || performance.now() - state.shownAt < SETTLE_MS;
  // Enter on a focused button presses that button; elsewhere it is once.
  if (ev.key === "Enter" && ev.target instanceof HTMLButtonElement) {
    if (settling) ev.preventDefault();
    return;
  }
  if (settling) return;
  const c = choiceForKey(item, ev.key);
  if (c) {
    ev.preventDefault();
    void choose(item, c);
  }
});

// Esc closes the dialog natively; "cancel" comes first.
ui.dialog.addEventListener("cancel", () => {
  state.autoOpen = false;
  state.current = null;
});

async function main() {
  try {
    const s = await get("/api/session").then((v) => /** @type {Session} */ (v));
    setCSRF(s.csrf);
    if (s.expiresAt) {
      const at = new Date(s.expiresAt);
      ui.expiry.textContent = `This page works until ${at.toLocaleString()}.`;
    }
  } catch (err) {
    failed(err);
    return;
  }
  await refresh();
  state.timer = window.setInterval(() => {
    if (document.visibilityState === "visible" && !state.busy) void refresh();
  }, POLL_MS);
}

void main();
