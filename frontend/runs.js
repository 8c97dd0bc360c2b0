// The Runs screen: the history of runs, newest first, and one run's calls
// as a timeline: a bar per call from when it started to when it ended on
// the run's time axis, coloured by its outcome, with who allowed it (a
// person's once, run, always or deny, or the policy). Rendering only:
// app.js wires it to the API.
import { h, svg, visible } from "./dom.js";

/** @typedef {import("./api.js").RunRow} RunRow */
/** @typedef {import("./api.js").RunDetail} RunDetail */
/** @typedef {import("./api.js").Call} Call */
/** @typedef {import("./api.js").RunFilter} RunFilter */

/** How many runs the list shows at first (the API's default). */
export const RUNS_LIMIT = 50;

/**
 * GET /api/runs with the filters set, as `hub runs` takes them, and how
 * many runs to list (the API's default, RUNS_LIMIT, is not written).
 * @param {RunFilter} f
 * @param {number} [limit]
 * @returns {string}
 */
export function runsPath(f, limit = RUNS_LIMIT) {
  const q = new URLSearchParams();
  if (f.status) q.set("status", f.status);
  if (f.since) q.set("since", f.since);
  if (f.namespace.trim()) q.set("namespace", f.namespace.trim());
  if (limit !== RUNS_LIMIT) q.set("limit", String(limit));
  const qs = q.toString();
  return qs ? `/api/runs?${qs}` : "/api/runs";
}

/**
 * What the list says below its last run when older ones are left out.
 * @param {number} shown
 * @param {RunFilter} f
 * @returns {string}
 */
export function moreText(shown, f) {
  const match = f.status || f.since || f.namespace.trim() ? " that match" : "";
  return `The newest ${shown} runs${match} are listed; older ones are not.`;
}

/**
 * What the list says when it is empty.
 * @param {RunFilter} f
 * @returns {string}
 */
export function emptyText(f) {
  return f.status || f.since || f.namespace.trim() ? "No runs match the filters." : "No runs yet.";
}

/** The timeline's drawing width, in SVG units (the track scales to fit). */
export const WIDTH = 1000;
/** The thinnest bar drawn, so an instant call is still seen. */
const MIN_BAR = 4;

/** @type {Record<string, string>} */
const DECISIONS = {
  once: "allowed once by you",
  run: "allowed for the run by you",
  always: "always allowed by you",
  deny: "denied by you",
  policy: "by policy (nobody was asked)",
};

/**
 * A duration in words.
 * @param {number} ms
 * @returns {string}
 */
export function duration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  const m = Math.round(s / 60);
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/**
 * A time of day, or a date and time when not today.
 * @param {string | undefined} iso
 * @param {number} now
 * @returns {string}
 */
export function when(iso, now) {
  if (!iso) return "";
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return "";
  return new Date(now).toDateString() === t.toDateString() ? t.toLocaleTimeString() : t.toLocaleString();
}

/**
 * Renders the list of runs, newest first as the API gives them.
 * @param {RunRow[]} runs
 * @param {string} selected the run shown, if any
 * @param {(id: string) => void} onOpen
 * @param {number} now
 * @returns {HTMLLIElement[]}
 */
export function renderRunList(runs, selected, onOpen, now) {
  return runs.map((r) => {
    const b = h(
      "button",
      { type: "button", class: "run-row", "data-testid": "run-row", "data-run": r.id, "data-status": r.status, "aria-current": r.id === selected ? "true" : undefined },
      h("span", { class: "address" }, r.id),
      h("span", { class: `badge run-${r.status}` }, r.status.replaceAll("_", " ")),
      h(
        "span",
        { class: "muted" },
        `started ${when(r.createdAt, now)} · ${r.attempts} attempt(s)${r.waiting > 0 ? ` · ${r.waiting} waiting for a person` : ""}`,
      ),
    );
    b.addEventListener("click", () => onOpen(r.id));
    return h("li", null, b);
  });
}

/**
 * Where each call sits on the run's time axis. A call's journal line is
 * written when it ends (`at`), so it started `ms` before; a call in flight
 * was journaled when it started and has no end: its bar runs to the end of
 * the axis. A person's decision is a tick at when it was made.
 * @param {Call[]} calls
 * @param {string} [endedAt] when the run was last updated
 * @returns {{start: number, end: number, rows: {call: Call, start: number, end: number, x: number, w: number, tick: number | null, decision: string, outcome: "ok" | "error" | "in-flight"}[]}}
 */
export function layout(calls, endedAt) {
  const times = calls.map((c) => {
    const at = Date.parse(c.at);
    return c.inFlight ? { s: at, e: at } : { s: at - Math.max(0, c.ms), e: at };
  });
  const all = times.flatMap((t) => [t.s, t.e]);
  for (const c of calls) {
    if (c.decision) all.push(Date.parse(c.decision.at));
  }
  const finite = all.filter(Number.isFinite);
  const start = finite.length > 0 ? Math.min(...finite) : 0;
  let end = finite.length > 0 ? Math.max(...finite) : 0;
  const last = endedAt ? Date.parse(endedAt) : NaN;
  if (calls.some((c) => c.inFlight) && Number.isFinite(last) && last > end) end = last;
  const span = Math.max(end - start, 1);
  const x = (/** @type {number} */ t) => Math.min(WIDTH, Math.max(0, ((t - start) / span) * WIDTH));
  const rows = calls.map((call, i) => {
    const t = times[i];
    const e = call.inFlight ? end : t.e;
    const x0 = Number.isFinite(t.s) ? x(t.s) : 0;
    const w = Math.max(MIN_BAR, (Number.isFinite(e) ? x(e) : x0) - x0);
    const d = call.decision ? Date.parse(call.decision.at) : NaN;
    return {
      call,
      start: t.s,
      end: e,
      x: Math.min(x0, WIDTH - MIN_BAR),
      w: Math.min(w, WIDTH - Math.min(x0, WIDTH - MIN_BAR)),
      tick: Number.isFinite(d) ? x(d) : null,
      decision: call.decision ? call.decision.choice : "policy",
      outcome: /** @type {"ok" | "error" | "in-flight"} */ (call.inFlight ? "in-flight" : call.ok ? "ok" : "error"),
    };
  });
  return { start, end, rows };
}

/**
 * The outcome of a call in words.
 * @param {Call} c
 * @returns {string}
 */
export function outcomeText(c) {
  if (c.inFlight) return "in flight: it may have happened";
  if (c.ok) return "ok";
  if (!c.error) return "failed";
  return `${c.error.code}: ${c.error.message}`;
}

/**
 * The calls of a run as a timeline: one row per call, its words above (or
 * beside, on a wide screen) a track holding its bar on the shared axis.
 * @param {Call[]} calls
 * @param {string} [endedAt]
 * @returns {HTMLElement}
 */
export function renderTimeline(calls, endedAt) {
  if (calls.length === 0) return h("p", { id: "run-timeline", class: "muted" }, "This run made no tool calls.");
  const l = layout(calls, endedAt);
  const span = l.end - l.start;
  const grid = () => [0.25, 0.5, 0.75].map((f) => svg("line", { class: "grid", x1: f * WIDTH, x2: f * WIDTH, y1: 0, y2: 20 }));
  const rows = l.rows.map((r) => {
    const c = r.call;
    const label = `${c.address}: ${outcomeText(c)}, ${duration(c.inFlight ? NaN : c.ms) || "no end"}, ${DECISIONS[r.decision] ?? r.decision}`;
    return h(
      "li",
      {
        class: `call outcome-${r.outcome} decision-${r.decision}`,
        "data-testid": "timeline-call",
        "data-seq": String(c.seq),
        "data-outcome": r.outcome,
        "data-decision": r.decision,
      },
      h(
        "div",
        { class: "call-words" },
        h("span", { class: "seq" }, `#${c.seq}`),
        h("span", { class: "address" }, c.address),
        c.connection && c.connection !== "default" ? h("span", { class: "muted" }, ` via ${c.connection}`) : null,
        h(
          "span",
          { class: "call-facts" },
          h("span", { class: `chip outcome-${r.outcome}` }, r.outcome === "error" && c.error ? c.error.code : r.outcome === "in-flight" ? "in flight" : r.outcome),
          h("span", { class: `chip decision decision-${r.decision}` }, r.decision),
          h("span", { class: "muted" }, c.inFlight ? "no end recorded" : duration(c.ms)),
        ),
        c.repeated ? h("span", { class: "muted", "data-testid": "call-repeated" }, "read repeated after an interrupted attempt") : null,
        !c.ok && !c.inFlight && c.error ? h("span", { class: "call-error" }, c.error.message) : null,
      ),
      svg(
        "svg",
        { class: "track", viewBox: `0 0 ${WIDTH} 20`, preserveAspectRatio: "none", role: "img", "aria-label": label },
        svg("title", null, label),
        ...grid(),
        svg("rect", { class: `bar outcome-${r.outcome}`, "data-testid": "timeline-bar", x: r.x.toFixed(1), y: 4, width: r.w.toFixed(1), height: 12, rx: 2 }),
        // From the person's decision to the call: the wait the decision ended.
        r.tick !== null && r.tick < r.x ? svg("rect", { class: `wait decision-${r.decision}`, x: r.tick.toFixed(1), y: 9, width: (r.x - r.tick).toFixed(1), height: 2 }) : null,
        r.tick !== null ? svg("rect", { class: `tick decision-${r.decision}`, x: Math.max(0, Math.min(WIDTH - 3, r.tick - 1.5)).toFixed(1), y: 0, width: 3, height: 20 }) : null,
      ),
    );
  });
  return h(
    "figure",
    { id: "run-timeline", class: "timeline", "aria-label": "The run's calls over time" },
    h(
      "div",
      { class: "axis", "aria-hidden": "true" },
      h("span", { class: "axis-start" }, new Date(l.start).toLocaleTimeString()),
      h("span", { class: "axis-mid" }, `+${duration(span / 2)}`),
      h("span", { class: "axis-end" }, `+${duration(span)}`),
    ),
    h("ol", { class: "plain calls" }, ...rows),
    h(
      "figcaption",
      { class: "legend muted" },
      "Each bar runs from when the call started to when it ended, on one axis from the run's first call to its last (",
      duration(span),
      "). Colour: ",
      h("span", { class: "swatch outcome-ok" }),
      " ok, ",
      h("span", { class: "swatch outcome-error" }),
      " failed, ",
      h("span", { class: "swatch outcome-in-flight" }),
      " in flight. A tick marks when a person decided, a thin line joins it to the call; the label says who allowed the call: once, run, always, deny, or policy.",
    ),
  );
}

/**
 * One run: its facts, its calls as a timeline, and its code.
 * @param {RunDetail} d
 * @param {number} now
 * @returns {HTMLElement}
 */
export function renderRunDetail(d, now) {
  const r = d.run;
  const err = d.envelope?.error;
  return h(
    "article",
    { class: "run-detail", "data-testid": "run-detail", "data-run": r.id },
    h("h3", { id: "run-title", class: "address", tabindex: "-1" }, `Run ${r.id}`),
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "Status"),
      h("dd", null, h("span", { class: `badge run-${r.status}` }, r.status.replaceAll("_", " "))),
      h("dt", null, "Started"),
      h("dd", null, when(r.createdAt, now)),
      h("dt", null, "Last change"),
      h("dd", null, when(r.updatedAt, now)),
      h("dt", null, "Attempts"),
      h("dd", null, String(r.attempts)),
      h("dt", null, "Calls"),
      h("dd", null, String(d.calls.length)),
      r.waiting > 0 ? h("dt", null, "Waiting") : null,
      r.waiting > 0 ? h("dd", null, `${r.waiting} item(s) wait for a person`) : null,
    ),
    err ? h("p", { class: "warn", "data-testid": "run-error" }, `${err.code ?? "error"}: ${err.message ?? ""}`) : null,
    r.status === "interrupted"
      ? h(
          "p",
          { class: "warn", "data-testid": "run-interrupted" },
          "The process that ran it stopped (killed, crashed) before it ended. The Approvals screen resumes it (a call that was in flight asks first) or cancels it.",
        )
      : null,
    h("h4", null, "Calls over time"),
    renderTimeline(d.calls, r.updatedAt),
    h("h4", null, "Code"),
    h("pre", { class: "args", tabindex: "0", "aria-label": "The run's code" }, visible(d.code)),
  );
}
