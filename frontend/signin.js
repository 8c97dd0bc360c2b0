// The Sources screen's sign-ins: each connection of an OAuth source that
// waits for a person to sign in (and why), with a "Sign in" button that
// starts the hub's sign-in (POST /api/signin, the flow of `capabilities hub
// auth`), opens the authorization page in a new tab (the desktop app's
// window has the hub open it in the system's browser), and watches until
// the hub has the tokens or says why not.
import { get, post } from "./api.js";
import { h, replace } from "./dom.js";

/**
 * A connection needing a sign-in, or one started here (GET /api/signins).
 * @typedef {object} SignIn
 * @property {string} namespace
 * @property {string} connection
 * @property {string} [reason]
 * @property {"needed" | "waiting" | "failed" | "signed_in"} state
 * @property {string} [authUrl]
 * @property {boolean} [opened]
 * @property {string} [error]
 * @property {number} [tools]
 */

// How often the page reads the sign-ins while one waits for the browser.
const WATCH_MS = 1000;

const view = {
  /** @type {HTMLElement | null} */
  el: null,
  /** @type {() => void} */
  changed: () => {},
  /** @type {number | undefined} */
  timer: undefined,
  /** @type {Map<string, string>} the last state shown, per connection */
  states: new Map(),
  /** @type {Map<string, Window>} a tab opened on a click, waiting for its address */
  tabs: new Map(),
  readOnly: false,
};

/** @param {SignIn} s */
const keyOf = (s) => `${s.namespace}/${s.connection}`;

/**
 * An address the page may open: http or https only.
 * @param {string | undefined} u
 * @returns {u is string}
 */
function openable(u) {
  if (!u) return false;
  try {
    const p = new URL(u).protocol;
    return p === "https:" || p === "http:";
  } catch {
    return false;
  }
}

/**
 * Shows the sign-ins in el and keeps them current while one waits;
 * changed runs when a sign-in ends, so the sources are read again.
 * @param {HTMLElement} el
 * @param {() => void} changed
 */
export async function showSignIns(el, changed) {
  view.el = el;
  view.changed = changed;
  await refresh();
}

async function refresh() {
  const el = view.el;
  if (!el) return;
  if (view.timer !== undefined) clearTimeout(view.timer);
  view.timer = undefined;
  /** @type {SignIn[]} */
  let list;
  try {
    const v = await get("/api/signins").then((x) => /** @type {{signIns: SignIn[], readOnly?: boolean}} */ (x));
    list = v.signIns;
    view.readOnly = v.readOnly === true;
  } catch (err) {
    replace(el, h("p", { class: "error" }, err instanceof Error ? err.message : String(err)));
    return;
  }
  let ended = false;
  for (const s of list) {
    const before = view.states.get(keyOf(s));
    if (before === "waiting" && s.state !== "waiting") ended = true;
    view.states.set(keyOf(s), s.state);
    follow(s);
  }
  el.hidden = list.length === 0;
  replace(el, ...renderSignIns(list, view.readOnly));
  const screen = el.closest("section");
  if (list.some((s) => s.state === "waiting") && document.contains(el) && !(screen instanceof HTMLElement && screen.hidden)) {
    view.timer = window.setTimeout(() => void refresh(), WATCH_MS);
  }
  if (ended) view.changed();
}

/**
 * Sends the tab opened on the click to the authorization page once the hub
 * has its address, or closes it when the hub opened the page itself or the
 * sign-in ended.
 * @param {SignIn} s
 */
function follow(s) {
  const tab = view.tabs.get(keyOf(s));
  if (!tab) return;
  if (s.state === "waiting" && !s.opened && !openable(s.authUrl)) return; // not known yet
  view.tabs.delete(keyOf(s));
  if (s.state === "waiting" && !s.opened && openable(s.authUrl)) {
    tab.opener = null;
    tab.location.href = s.authUrl;
  } else {
    tab.close();
  }
}

/**
 * Renders the sign-ins (none: nothing); readOnly (a page about one run)
 * shows them without a button.
 * @param {SignIn[]} list
 * @param {boolean} readOnly
 * @returns {HTMLElement[]}
 */
export function renderSignIns(list, readOnly) {
  if (list.length === 0) return [];
  return [
    h(
      "section",
      { class: "signins card-box", "aria-labelledby": "signins-title" },
      h("h3", { id: "signins-title" }, "Sign in"),
      ...list.map((s) => item(s, readOnly)),
    ),
  ];
}

/**
 * @param {SignIn} s
 * @param {boolean} readOnly
 * @returns {HTMLElement}
 */
function item(s, readOnly) {
  const who = keyOf(s);
  /** @type {(HTMLElement | string | null)[]} */
  const parts = [h("p", null, h("span", { class: "address" }, who), s.reason ? ` needs you to sign in: ${s.reason}.` : "")];
  if (s.state === "waiting") {
    parts.push(
      h(
        "p",
        { class: "muted", role: "status", "data-testid": "signin-waiting" },
        s.opened ? "Sign in in your browser: the page opened there." : "Sign in on the page that opened in a new tab.",
        " This screen follows when you are done.",
      ),
    );
    if (openable(s.authUrl)) {
      parts.push(h("p", { class: "muted" }, "No page? Open this address: ", h("code", { class: "signin-url", "data-testid": "signin-url" }, s.authUrl)));
    }
  }
  if (s.state === "failed" && s.error) parts.push(h("p", { class: "warn", "data-testid": "signin-error" }, `The sign-in failed: ${s.error}`));
  if (s.state === "signed_in") {
    const tools = s.tools === undefined ? "" : ` It lists ${s.tools} tool(s); review them on the Review screen.`;
    parts.push(h("p", { class: "decided", "data-testid": "signin-done" }, `Signed in to ${who}.${tools}`));
  }
  if (s.state !== "signed_in" && !readOnly) {
    const id = `signin-client-${who.replace(/[^A-Za-z0-9_-]/g, "-")}`;
    const client = /** @type {HTMLInputElement} */ (h("input", { id, type: "text", autocomplete: "off", spellcheck: "false", "data-testid": "signin-client-id" }));
    const button = /** @type {HTMLButtonElement} */ (
      h("button", { type: "button", class: "primary", "data-testid": "signin-button" }, s.state === "waiting" ? "Start again" : "Sign in")
    );
    button.addEventListener("click", () => void start(s, client.value.trim(), button));
    parts.push(
      h(
        "details",
        { class: "signin-client" },
        h("summary", null, "A client registered by hand"),
        h("label", { for: id }, "Client ID "),
        client,
        h("p", { class: "muted" }, "For a server that registers no clients itself (as `capabilities hub auth --client-id`)."),
      ),
      button,
    );
  }
  return h("div", { class: "signin", "data-testid": "signin", "data-namespace": s.namespace, "data-connection": s.connection, "data-state": s.state }, ...parts);
}

/**
 * Starts a sign-in: a tab opens now, on the click (a tab opened later would
 * be blocked), and goes to the authorization page once the hub knows it.
 * @param {SignIn} s
 * @param {string} clientId
 * @param {HTMLButtonElement} button
 */
async function start(s, clientId, button) {
  button.disabled = true;
  /** @type {Window | null} */
  let tab = null;
  try {
    tab = window.open("about:blank", "_blank");
  } catch {
    tab = null;
  }
  const key = keyOf(s);
  const old = view.tabs.get(key);
  if (old) old.close();
  if (tab) view.tabs.set(key, tab);
  else view.tabs.delete(key);
  try {
    const a = await post("/api/signin", { namespace: s.namespace, connection: s.connection, clientId }).then((v) => /** @type {SignIn} */ (v));
    view.states.set(key, a.state === "waiting" ? "waiting" : "");
    follow(a);
  } catch (err) {
    view.tabs.get(key)?.close();
    view.tabs.delete(key);
    if (view.el) view.el.prepend(h("p", { class: "error", role: "alert" }, err instanceof Error ? err.message : String(err)));
    button.disabled = false;
    return;
  }
  await refresh();
}
