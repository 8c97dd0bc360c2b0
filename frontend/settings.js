// The Settings screen: the person's settings of the hub's desktop side and
// the pause, each a checkbox that changes it at once, and how much run
// history the hub keeps (days and megabytes), saved when a number is
// changed. Rendering only: app.js wires it to the API.
import { h } from "./dom.js";

/** @typedef {import("./api.js").Settings} Settings */

/** @typedef {"raiseApprovals" | "paused"} Toggle */
/** @typedef {"runRetentionDays" | "runRetentionMB"} Amount */

/**
 * One setting: a labelled checkbox and what it does.
 * @param {Toggle} key
 * @param {string} label
 * @param {string} hint
 * @param {Settings} s
 * @param {(key: keyof Settings, value: boolean | number) => void} change
 * @returns {HTMLElement}
 */
function setting(key, label, hint, s, change) {
  const id = `setting-${key}`;
  const box = /** @type {HTMLInputElement} */ (h("input", { type: "checkbox", id, "aria-describedby": `${id}-hint`, "data-setting": key }));
  box.checked = s[key];
  box.addEventListener("change", () => change(key, box.checked));
  return h(
    "div",
    { class: "setting" },
    box,
    h("label", { for: id }, label),
    h("p", { id: `${id}-hint`, class: "muted" }, hint),
  );
}

/**
 * One amount: a labelled whole number, saved when it changes (a value out
 * of range is not sent: the field says so).
 * @param {Amount} key
 * @param {string} label
 * @param {string} hint
 * @param {number} max
 * @param {Settings} s
 * @param {(key: keyof Settings, value: boolean | number) => void} change
 * @returns {HTMLElement}
 */
function amount(key, label, hint, max, s, change) {
  const id = `setting-${key}`;
  const input = /** @type {HTMLInputElement} */ (
    h("input", { type: "number", id, min: "1", max: String(max), step: "1", inputmode: "numeric", "aria-describedby": `${id}-hint`, "data-setting": key })
  );
  input.value = String(s[key]);
  input.addEventListener("change", () => {
    const n = Number(input.value);
    if (!Number.isInteger(n) || n < 1 || n > max) {
      input.setCustomValidity(`A whole number from 1 to ${max}.`);
      input.reportValidity();
      return;
    }
    input.setCustomValidity("");
    change(key, n);
  });
  return h("div", { class: "setting amount" }, h("label", { for: id }, label), input, h("p", { id: `${id}-hint`, class: "muted" }, hint));
}

/**
 * Shows what the hub answered in the controls already drawn, leaving alone
 * the one the person is in (re-drawing would lose what they are typing).
 * @param {HTMLElement} root
 * @param {Settings} s
 */
export function showSettings(root, s) {
  for (const el of root.querySelectorAll("input[data-setting]")) {
    if (!(el instanceof HTMLInputElement) || el === document.activeElement) continue;
    const key = /** @type {keyof Settings} */ (el.dataset.setting);
    const v = s[key];
    if (typeof v === "boolean") el.checked = v;
    else if (typeof v === "number") el.value = String(v);
  }
}

/**
 * Renders the settings.
 * @param {Settings} s
 * @param {(key: keyof Settings, value: boolean | number) => void} change
 * @returns {HTMLElement[]}
 */
export function renderSettings(s, change) {
  return [
    setting(
      "raiseApprovals",
      "Bring the approval window to the front when a call waits",
      "The desktop app opens the window and takes the focus. Off: a notification asks, and a window the app opens by itself comes up minimised.",
      s,
      change,
    ),
    setting("paused", "Pause the hub", "Every call asks a person first, reads too: nothing runs unseen.", s, change),
    amount(
      "runRetentionDays",
      "Keep runs for (days)",
      "A run that ended longer ago is deleted with its journal and large results. A run waiting for a person is kept.",
      36500,
      s,
      change,
    ),
    amount(
      "runRetentionMB",
      "Keep at most (MB) of runs",
      "Beyond this, the oldest runs that ended are deleted first (capabilities hub runs prune does the same at once).",
      1048576,
      s,
      change,
    ),
  ];
}
