// The console page: five screens over the console API (Approvals, Review,
// Runs, Sources, Settings), one shown at a time, chosen by the bar, 1–5 or
// g then a/r/u/s/t, and kept in the address's fragment (#review, #runs/<run>).
// Plain ES modules, no build step.
import { APIError, acceptReview, decide, fullArgs, get, post, runAction, setCSRF } from "./api.js";
import {
  SETTLE_MS,
  afterKey,
  choiceForKey,
  choiceText,
  positionText,
  renderApproval,
  renderDecided,
  renderInterrupted,
  renderQueue,
} from "./approval.js";
import { h, replace, visible } from "./dom.js";
import { renderReview, reviewCount } from "./review.js";
import { RUNS_LIMIT, emptyText, moreText, renderRunDetail, renderRunList, runsPath } from "./runs.js";
import { renderSettings, showSettings } from "./settings.js";
import { renderImports } from "./imports.js";
import { showSignIns } from "./signin.js";
import { renderSources } from "./sources.js";

/** @typedef {import("./api.js").Approval} Approval */
/** @typedef {import("./api.js").Interrupted} Interrupted */
/** @typedef {import("./api.js").Choice} Choice */
/** @typedef {import("./api.js").Session} Session */
/** @typedef {import("./api.js").Inbox} Inbox */
/** @typedef {import("./api.js").Action} Action */
/** @typedef {import("./api.js").RunRow} RunRow */
/** @typedef {import("./api.js").RunDetail} RunDetail */
/** @typedef {import("./api.js").SourceInfo} SourceInfo */
/** @typedef {import("./api.js").Settings} Settings */
/** @typedef {import("./api.js").ImportSkill} ImportSkill */
/** @typedef {"approvals" | "review" | "runs" | "sources" | "settings"} Screen */

/** @type {Screen[]} */
const SCREENS = ["approvals", "review", "runs", "sources", "settings"];
/** @type {Record<string, Screen>} */
const AFTER_G = { a: "approvals", r: "review", u: "runs", s: "sources", t: "settings" };
// g then a screen's letter must follow within this long.
const G_MS = 1500;

const POLL_MS = 3000;

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
  interrupted: byId("interrupted", HTMLElement),
  interruptedList: byId("interrupted-list", HTMLOListElement),
  status: byId("status", HTMLDivElement),
  error: byId("error", HTMLParagraphElement),
  expiry: byId("expiry", HTMLParagraphElement),
  dialog: byId("approval", HTMLDialogElement),
  reviewBody: byId("review-body", HTMLDivElement),
  reviewStatus: byId("review-status", HTMLDivElement),
  importBody: byId("import-body", HTMLDivElement),
  importStatus: byId("import-status", HTMLDivElement),
  runsFilter: byId("runs-filter", HTMLFormElement),
  runsStatus: byId("runs-status", HTMLSelectElement),
  runsSince: byId("runs-since", HTMLSelectElement),
  runsNamespace: byId("runs-namespace", HTMLInputElement),
  runsList: byId("runs-list", HTMLOListElement),
  runsEmpty: byId("runs-empty", HTMLParagraphElement),
  runsMore: byId("runs-more", HTMLDivElement),
  runsMoreText: byId("runs-more-text", HTMLParagraphElement),
  runsOlder: byId("runs-older", HTMLButtonElement),
  runDetail: byId("run-detail", HTMLDivElement),
  sourcesList: byId("sources-list", HTMLDivElement),
  settingsList: byId("settings-list", HTMLDivElement),
  settingsStatus: byId("settings-status", HTMLDivElement),
  approvalsCount: byId("nav-approvals-count", HTMLSpanElement),
  reviewCount: byId("nav-review-count", HTMLSpanElement),
};

const state = {
  // How many runs the Runs screen lists: RUNS_LIMIT, doubled by each "Show
  // older runs", back to RUNS_LIMIT when a filter changes.
  runsLimit: RUNS_LIMIT,
  /** @type {Approval[]} */
  queue: [],
  /** @type {Interrupted[]} */
  interrupted: [],
  /** @type {Approval | null} */
  current: null,
  busy: false,
  // The next call opens by itself on load and after a decision; Esc stops
  // that until the person opens one.
  autoOpen: true,
  stopped: false,
  shownAt: 0,
  // The call the fragment names (#approvals/<run>/<call>), opened at the
  // next refresh.
  /** @type {{run: string, id: string} | null} */
  wanted: null,
  // When the shortcuts of the call shown work (performance.now()).
  armedAt: 0,
  // What the last decision did, for the next call's card.
  /** @type {{label: string, address: string, next: string} | null} */
  decided: null,
  /** @type {number | undefined} */
  timer: undefined,
  /** @type {Screen} */
  screen: "approvals",
  /** @type {string} the run shown on the Runs screen */
  run: "",
  // The Review screen: the inbox exactly as shown (acceptance sends its
  // contracts), the person's rule per tool, and when it was shown.
  /** @type {Inbox | null} */
  inbox: null,
  /** @type {Record<string, Action>} */
  actions: {},
  reviewShownAt: 0,
  reviewBusy: false,
  // When g was pressed, for g then a screen's letter.
  gAt: -Infinity,
  // Counts the screens shown: a load finishing after the person moved on
  // does not draw over the screen now shown.
  shown: 0,
};

/** @param {Approval} a @param {Approval} b */
const same = (a, b) => a.run === b.run && a.id === b.id;

/** @param {string} msg */
function showError(msg) {
  ui.error.textContent = visible(msg);
  ui.error.hidden = msg === "";
}

/**
 * Stops the page for good (expired, the session is gone, or the console stopped).
 * @param {string} msg
 */
function stop(msg) {
  state.stopped = true;
  if (state.timer !== undefined) clearInterval(state.timer);
  if (ui.dialog.open) ui.dialog.close();
  // Nothing can be decided here any more: no count says otherwise.
  state.queue = [];
  ui.approvalsCount.textContent = "";
  ui.reviewCount.textContent = "";
  setTitle();
  replace(ui.queue);
  ui.empty.hidden = false;
  ui.empty.textContent = "";
  showError(msg);
}

/** @param {unknown} err */
function failed(err) {
  if (err instanceof APIError && (err.status === 401 || err.status === 410 || err.status === 0)) {
    stop(err.message);
    return;
  }
  showError(err instanceof Error ? err.message : String(err));
}

function setTitle() {
  const n = state.queue.length;
  document.title = `${n > 0 ? `(${n}) ` : ""}Capabilities: ${state.screen}`;
}

function renderList() {
  const now = Date.now();
  replace(ui.queue, ...renderQueue(state.queue, open, now));
  ui.empty.hidden = state.queue.length > 0;
  ui.empty.textContent = "Nothing waits for a decision.";
  ui.approvalsCount.textContent = state.queue.length > 0 ? String(state.queue.length) : "";
  replace(ui.interruptedList, ...renderInterrupted(state.interrupted, act));
  ui.interrupted.hidden = state.interrupted.length === 0;
  setTitle();
}

/**
 * Resumes an interrupted run, or cancels it, and says what happens next.
 * @param {string} run
 * @param {"resume" | "cancel"} what
 */
async function act(run, what) {
  if (state.busy || state.stopped) return;
  state.busy = true;
  for (const b of ui.interruptedList.querySelectorAll("button")) b.disabled = true;
  try {
    const r = await runAction(run, what);
    showError("");
    replace(ui.status, renderDecided(what === "resume" ? "Resumed" : "Cancelled", `run ${run}`, r.next));
  } catch (err) {
    failed(err);
  } finally {
    state.busy = false;
  }
  await refresh();
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
  const { card, first } = renderApproval(item, where, (c) => choose(item, c), dismiss, notice, fullArgs);
  replace(ui.dialog, card);
  const shownAt = performance.now();
  state.shownAt = shownAt;
  arm(shownAt, shownAt + SETTLE_MS);
  if (!ui.dialog.open) ui.dialog.showModal();
  if (first) first.focus();
}

/**
 * Arms the shortcuts of the call shown at shownAt at armedAt
 * (performance.now()). data-armed says they work now: what a test waits
 * for before it presses a key.
 * @param {number} shownAt
 * @param {number} armedAt
 */
function arm(shownAt, armedAt) {
  state.armedAt = armedAt;
  ui.dialog.removeAttribute("data-armed");
  const check = () => {
    if (state.shownAt !== shownAt) return;
    // A timer may fire a little early, and a key may have moved the time.
    const left = state.armedAt - performance.now();
    if (left > 0) setTimeout(check, left + 1);
    else ui.dialog.setAttribute("data-armed", "true");
  };
  setTimeout(check, armedAt - performance.now() + 1);
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
    // A call that expired is refused (410) and leaves the queue: the page
    // goes on with the others (a page past its own expiry stops at the
    // refresh below, which the console refuses with 410 too).
    if (err instanceof APIError && err.status === 410) showError(err.message);
    else failed(err);
    // The next call opens at once: it says the last decision was not
    // recorded, and why, or the refusal would sit behind it unseen.
    if (!state.stopped) state.decided = { label: "Not recorded", address: item.address, next: err instanceof Error ? err.message : String(err) };
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
    const { approvals, interrupted } = await get("/api/approvals").then(
      (v) => /** @type {{approvals: Approval[], interrupted?: Interrupted[]}} */ (v),
    );
    state.queue = approvals;
    state.interrupted = interrupted ?? [];
  } catch (err) {
    failed(err);
    return;
  }
  renderList();
  const cur = state.current;
  if (ui.dialog.open && cur && !state.queue.some((q) => same(q, cur))) {
    closeDialog();
    replace(ui.status, renderDecided("No longer waiting", cur.address, "This call was decided elsewhere or expired."));
  } else if (ui.dialog.open && cur) {
    // Calls came or went while this one is open: its head says where it
    // stands now ("Call 1 of 2" while ten waited, before).
    const position = ui.dialog.querySelector(".position");
    if (position) position.textContent = positionText(cur, state.queue.findIndex((q) => same(q, cur)), state.queue.length);
  }
  const wanted = state.wanted;
  state.wanted = null;
  const item = wanted && state.queue.find((q) => q.run === wanted.run && q.id === wanted.id);
  if (wanted) {
    // Once: a reload shows the queue as usual.
    history.replaceState(null, "", location.pathname + location.search);
    state.autoOpen = true;
    if (!item) {
      if (ui.dialog.open) closeDialog();
      const next = `The call you opened (${wanted.id} of run ${wanted.run}) was decided elsewhere or expired.`;
      replace(ui.status, renderDecided("No longer waiting", "", next));
      state.decided = { label: "No longer waiting", address: "", next };
    }
  }
  if (item && state.screen === "approvals") {
    show(item);
  } else if (!ui.dialog.open && state.autoOpen && state.screen === "approvals" && state.queue.length > 0) {
    show(state.queue[0]);
  }
  state.decided = null;
}

ui.dialog.addEventListener("keydown", (ev) => {
  const item = state.current;
  if (!item || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const now = performance.now();
  const early = now < state.armedAt;
  if (early) arm(state.shownAt, afterKey(state.armedAt, now)); // still typing: wait again
  const settling = state.busy || ev.repeat || early;
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

// ---- Screens ----

/**
 * The screen (and run) the address's fragment names; #approvals/<run>/<call>
 * names one pending call (what the desktop app opens for a notification or
 * a tray item the person picked).
 * @returns {{screen: Screen, run: string, call: string}}
 */
function route() {
  const [name, ...rest] = location.hash.replace(/^#/, "").split("/");
  const screen = SCREENS.find((s) => s === name) ?? "approvals";
  let run = "";
  let call = "";
  try {
    if (screen === "runs") run = decodeURIComponent(rest.join("/"));
    if (screen === "approvals" && rest.length === 2) [run, call] = rest.map(decodeURIComponent);
  } catch {
    run = "";
    call = "";
  }
  return { screen, run, call };
}

/**
 * Goes to a screen (and run): the fragment changes, and the page follows.
 * @param {Screen} screen
 * @param {string} [run]
 * @param {boolean} [focus] move focus to the screen's heading
 */
function go(screen, run, focus) {
  const hash = screen === "approvals" ? "" : run ? `#${screen}/${encodeURIComponent(run)}` : `#${screen}`;
  focusNext = focus === true;
  if (location.hash === hash || (hash === "" && location.hash === "#")) {
    void follow();
  } else if (hash === "") {
    history.pushState(null, "", location.pathname + location.search);
    void follow();
  } else {
    location.hash = hash;
  }
}

let focusNext = false;

/** Shows the screen the fragment names and reads what it shows. */
async function follow() {
  if (state.stopped) return;
  const { screen, run, call } = route();
  const focus = focusNext;
  focusNext = false;
  const changed = screen !== state.screen;
  state.screen = screen;
  state.shown++;
  for (const s of SCREENS) {
    byId(`screen-${s}`, HTMLElement).hidden = s !== screen;
    const b = byId(`nav-${s}`, HTMLButtonElement);
    if (s === screen) b.setAttribute("aria-current", "page");
    else b.removeAttribute("aria-current");
  }
  setTitle();
  if (focus) byId(`${screen === "approvals" ? "queue" : screen}-title`, HTMLHeadingElement).focus();
  if (screen !== "approvals" && ui.dialog.open) closeDialog();
  if (screen === "approvals") {
    if (changed) state.autoOpen = true;
    // The call the person picked opens, in place of any other.
    state.wanted = call ? { run, id: call } : null;
    await refresh();
  } else if (screen === "review") {
    if (changed) {
      // Nothing is accepted until the inbox read now is shown.
      state.inbox = null;
      replace(ui.reviewBody, h("p", { class: "muted" }, "Loading…"));
    }
    await loadReview();
  } else if (screen === "runs") {
    await loadRuns(run, focus);
  } else if (screen === "settings") {
    await loadSettings();
  } else {
    await loadSources();
  }
}

async function loadReview() {
  const shown = state.shown;
  try {
    const inbox = await get("/api/review").then((v) => /** @type {Inbox} */ (v));
    if (shown !== state.shown) return;
    showError("");
    state.inbox = inbox;
    state.actions = {};
    const { nodes } = renderReview(inbox, state.actions, () => void acceptShown());
    replace(ui.reviewBody, ...nodes);
    ui.reviewCount.textContent = reviewCount(inbox) > 0 ? String(reviewCount(inbox)) : "";
    state.reviewShownAt = performance.now();
  } catch (err) {
    failed(err);
    return;
  }
  try {
    const { skills } = await get("/api/import").then((v) => /** @type {{skills: ImportSkill[]}} */ (v));
    if (shown !== state.shown) return;
    replace(ui.importBody, ...renderImports(skills, !!state.inbox?.readOnly, (names) => void importChosen(names)));
  } catch (err) {
    failed(err);
  }
}

/**
 * Imports the chosen skills and shows what the agents' folders hold now.
 * @param {string[]} names
 */
async function importChosen(names) {
  for (const b of ui.importBody.querySelectorAll("button, input")) {
    if (b instanceof HTMLButtonElement || b instanceof HTMLInputElement) b.disabled = true;
  }
  try {
    const r = await post("/api/import", { skills: names }).then((v) => /** @type {{imported: string[], skills: ImportSkill[]}} */ (v));
    replace(ui.importStatus, h("p", { class: "decided", "data-testid": "import-done" }, `Imported ${r.imported.length} skill(s): ${r.imported.join(", ")}.`));
    replace(ui.importBody, ...renderImports(r.skills, false, (n) => void importChosen(n)));
  } catch (err) {
    if (err instanceof APIError && err.status === 409) {
      replace(ui.importStatus, h("p", { class: "warn", "data-testid": "import-conflict" }, `Nothing was imported: ${err.message}`));
      await loadReview();
    } else {
      failed(err);
    }
  }
}

/** Accepts exactly what the Review screen shows; a 409 reloads it. */
async function acceptShown() {
  const shown = state.inbox;
  if (!shown || shown.readOnly || reviewCount(shown) === 0 || state.reviewBusy) return;
  state.reviewBusy = true;
  for (const b of ui.reviewBody.querySelectorAll("button, select")) {
    if (b instanceof HTMLButtonElement || b instanceof HTMLSelectElement) b.disabled = true;
  }
  try {
    const a = await acceptReview(shown, state.actions);
    const parts = [`Accepted ${a.accepted} tool(s)`];
    if (a.commands > 0) parts.push(`consented to ${a.commands} command(s)`);
    if (a.removed > 0) parts.push(`forgot ${a.removed} removed tool(s)`);
    replace(ui.reviewStatus, h("p", { class: "decided", "data-testid": "review-accepted" }, `${parts.join(", ")}.`));
  } catch (err) {
    if (err instanceof APIError && err.status === 409) {
      replace(
        ui.reviewStatus,
        h("p", { class: "warn", "data-testid": "review-conflict" }, `Nothing was accepted: ${err.message}. The inbox below was read again; look at it and accept again.`),
      );
    } else {
      failed(err);
    }
  } finally {
    state.reviewBusy = false;
  }
  await loadReview();
  byId("review-title", HTMLHeadingElement).focus();
}

/**
 * Reads the runs, and the run shown if any.
 * @param {string} run
 * @param {boolean} focus
 */
async function loadRuns(run, focus) {
  state.run = run;
  const shown = state.shown;
  try {
    const filter = { status: ui.runsStatus.value, since: ui.runsSince.value, namespace: ui.runsNamespace.value };
    const path = runsPath(filter, state.runsLimit);
    const { runs, more } = await get(path).then((v) => /** @type {{runs: RunRow[], more: boolean}} */ (v));
    if (shown !== state.shown) return;
    showError("");
    replace(ui.runsList, ...renderRunList(runs, run, (id) => go("runs", id, true), Date.now()));
    ui.runsList.dataset.query = path; // what the list shows (tests wait on it)
    ui.runsEmpty.textContent = emptyText(filter);
    ui.runsEmpty.hidden = runs.length > 0;
    ui.runsMoreText.textContent = more ? moreText(runs.length, filter) : "";
    ui.runsMore.hidden = !more;
  } catch (err) {
    failed(err);
    return;
  }
  if (!run) {
    replace(ui.runDetail, h("p", { class: "muted" }, "Choose a run to see its calls over time."));
    return;
  }
  try {
    const d = await get(`/api/runs/${encodeURIComponent(run)}`).then((v) => /** @type {RunDetail} */ (v));
    if (shown !== state.shown) return;
    replace(ui.runDetail, renderRunDetail(d, Date.now()));
    if (focus) byId("run-title", HTMLHeadingElement).focus();
  } catch (err) {
    if (shown !== state.shown) return;
    replace(ui.runDetail, h("p", { class: "error", "data-testid": "run-missing" }, err instanceof Error ? err.message : String(err)));
  }
}

async function loadSources() {
  try {
    const shown = state.shown;
    const { sources } = await get("/api/sources").then((v) => /** @type {{sources: SourceInfo[]}} */ (v));
    if (shown !== state.shown) return;
    showError("");
    replace(ui.sourcesList, ...renderSources(sources, Date.now()));
    void showSignIns(byId("signins", HTMLDivElement), () => void loadSources());
  } catch (err) {
    failed(err);
  }
}

async function loadSettings() {
  try {
    const shown = state.shown;
    const s = await get("/api/settings").then((v) => /** @type {Settings} */ (v));
    if (shown !== state.shown) return;
    showError("");
    replace(ui.settingsList, ...renderSettings(s, (key, value) => void changeSetting(key, value)));
  } catch (err) {
    failed(err);
  }
}

/**
 * Changes one setting and shows what the hub answered.
 * @param {keyof Settings} key
 * @param {boolean | number} value
 */
async function changeSetting(key, value) {
  try {
    const s = await post("/api/settings", { [key]: value }).then((v) => /** @type {Settings} */ (v));
    showError("");
    showSettings(ui.settingsList, s);
    ui.settingsStatus.textContent = "Saved.";
  } catch (err) {
    failed(err);
  }
}

for (const s of SCREENS) {
  byId(`nav-${s}`, HTMLButtonElement).addEventListener("click", () => go(s));
}
// The Runs screen's filters: a choice applies at once, the namespace on
// Enter or Filter.
ui.runsFilter.addEventListener("submit", (ev) => {
  ev.preventDefault();
  state.runsLimit = RUNS_LIMIT;
  void loadRuns(state.run, false);
});
for (const el of [ui.runsStatus, ui.runsSince]) {
  el.addEventListener("change", () => {
    state.runsLimit = RUNS_LIMIT;
    void loadRuns(state.run, false);
  });
}
// Older runs: twice as many each time, the newest still first.
ui.runsOlder.addEventListener("click", () => {
  state.runsLimit *= 2;
  void loadRuns(state.run, false);
});
// Back and forward between fragments fire hashchange (popstate too: one is
// enough, or each screen would load twice).
window.addEventListener("hashchange", () => void follow());

// Screen shortcuts, and a on the Review screen. Not while a call is open
// (its own keys), nor while typing or choosing in a control.
document.addEventListener("keydown", (ev) => {
  if (ui.dialog.open || ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat || state.stopped) return;
  const t = ev.target;
  if (t instanceof HTMLInputElement || t instanceof HTMLSelectElement || t instanceof HTMLTextAreaElement) return;
  const now = performance.now();
  const afterG = now - state.gAt < G_MS;
  state.gAt = -Infinity;
  const k = ev.key.toLowerCase();
  if (afterG && k in AFTER_G) {
    ev.preventDefault();
    go(AFTER_G[k], undefined, true);
    return;
  }
  if (k === "g") {
    state.gAt = now;
    return;
  }
  const n = ["1", "2", "3", "4", "5"].indexOf(ev.key);
  if (n >= 0) {
    ev.preventDefault();
    go(SCREENS[n], undefined, true);
    return;
  }
  if (k === "a" && state.screen === "review" && now - state.reviewShownAt >= SETTLE_MS) {
    ev.preventDefault();
    void acceptShown();
  }
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
  await follow();
  if (state.screen !== "approvals") await refresh();
  if (state.screen !== "review" && !state.stopped) {
    // How many things await review, on the bar.
    get("/api/review")
      .then((v) => {
        const n = reviewCount(/** @type {Inbox} */ (v));
        ui.reviewCount.textContent = n > 0 ? String(n) : "";
      })
      .catch(() => {});
  }
  state.timer = window.setInterval(() => {
    if (document.visibilityState === "visible" && !state.busy) void refresh();
  }, POLL_MS);
  // Shown again (a tab brought back, the desktop app's window opened for a
  // new call): read the queue now, not at the next poll.
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible" && !state.busy) void refresh();
  });
}

void main();
