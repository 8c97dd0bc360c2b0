// The Sources screen: each source with its kind, health, tools (with
// their effect) and the names of its connections (never a credential).
// Rendering only: app.js wires it to the API.
import { h, visible } from "./dom.js";
import { when } from "./runs.js";

/** @typedef {import("./api.js").SourceInfo} SourceInfo */

/** @type {Record<string, string>} */
const EFFECTS = { read: "read-only", write: "writes", destructive: "destructive" };

/**
 * Renders every source.
 * @param {SourceInfo[]} sources
 * @param {number} now
 * @returns {HTMLElement[]}
 */
export function renderSources(sources, now) {
  if (sources.length === 0) return [h("p", { id: "sources-empty", class: "muted" }, "No sources yet: add one with `capabilities hub add`.")];
  return sources.map((s) => {
    const tools = s.tools ?? [];
    const conns = s.connections ?? [];
    const server = [s.serverName, s.serverVersion].filter(Boolean).join(" ");
    return h(
      "article",
      { class: "source card-box", "data-testid": "source", "data-namespace": s.namespace, "data-health": s.health },
      h(
        "header",
        { class: "review-head" },
        h("h3", { class: "address" }, s.namespace),
        h("span", { class: "badge" }, s.kind),
        h("span", { class: `badge health-${s.health}`, "data-testid": "source-health" }, s.health),
      ),
      h(
        "dl",
        { class: "facts" },
        server ? h("dt", null, "Server") : null,
        server ? h("dd", null, server) : null,
        s.url ? h("dt", null, "URL") : null,
        s.url ? h("dd", { class: "address" }, s.url) : null,
        s.command ? h("dt", null, "Command") : null,
        s.command ? h("dd", null, h("code", null, s.command)) : null,
        s.checkedAt ? h("dt", null, "Checked") : null,
        s.checkedAt ? h("dd", null, when(s.checkedAt, now)) : null,
        h("dt", null, "Connections"),
        h(
          "dd",
          null,
          conns.length === 0
            ? "none"
            : h("ul", { class: "plain inline" }, ...conns.map((c) => h("li", { "data-testid": "source-connection" }, c.name, c.default ? " (default)" : ""))),
        ),
      ),
      s.lastError ? h("p", { class: "warn", "data-testid": "source-error" }, s.lastError) : null,
      h(
        "details",
        { class: "tools", open: tools.length <= 8 },
        h("summary", null, `${tools.length} tool(s)`),
        h(
          "ul",
          { class: "plain tool-list" },
          ...tools.map((t) =>
            h(
              "li",
              { class: `effect-${t.effect}`, "data-testid": "source-tool", "data-address": t.address },
              h("span", { class: "address" }, t.address),
              h("span", { class: `badge effect effect-${t.effect}` }, EFFECTS[t.effect] ?? t.effect),
              h("span", { class: "summary" }, visible(t.title ? `${t.title}: ${t.summary}` : t.summary)),
            ),
          ),
        ),
      ),
    );
  });
}
