// The Settings screen: the person's settings of the hub's desktop side and
// the pause, each a checkbox that changes it at once. Rendering only:
// app.js wires it to the API.
import { h } from "./dom.js";

/** @typedef {import("./api.js").Settings} Settings */

/**
 * One setting: a labelled checkbox and what it does.
 * @param {keyof Settings} key
 * @param {string} label
 * @param {string} hint
 * @param {Settings} s
 * @param {(key: keyof Settings, on: boolean) => void} change
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
 * Renders the settings.
 * @param {Settings} s
 * @param {(key: keyof Settings, on: boolean) => void} change
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
  ];
}
