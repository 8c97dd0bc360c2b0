// The console's JSON API (engine/console). Every request goes to the
// page's own origin; decisions carry the session's CSRF token.

/** @typedef {"once" | "run" | "always" | "deny"} Choice */

/**
 * A call waiting for a decision (GET /api/approvals).
 * @typedef {object} Approval
 * @property {string} run
 * @property {string} id
 * @property {"approval" | "in_flight"} kind
 * @property {string} address
 * @property {string} connection
 * @property {string} summary
 * @property {"read" | "write" | "destructive"} [effect]
 * @property {unknown} [args]
 * @property {number} [argsSize] the whole arguments' size when args shows them shortened
 * @property {string} [reason]
 * @property {string} message
 * @property {string[]} [changes] what changed in a tool that changed upstream since it was reviewed
 * @property {string} [expiresAt]
 * @property {Choice[]} choices
 */

/**
 * A run whose process stopped (killed, crashed) while it ran (GET
 * /api/approvals): a person resumes or cancels it.
 * @typedef {object} Interrupted
 * @property {string} run
 * @property {number} attempts
 * @property {string} createdAt
 * @property {string} updatedAt
 * @property {string[]} inFlight the addresses of the calls that were in flight: each may have happened
 */

/**
 * What resuming or cancelling a run answers.
 * @typedef {object} RunAction
 * @property {string} run
 * @property {string} status
 * @property {string} next
 */

/**
 * GET /api/session.
 * @typedef {object} Session
 * @property {string} channel
 * @property {string} [run]
 * @property {string} [csrf]
 * @property {string} [expiresAt]
 */

/**
 * What a decision answers.
 * @typedef {object} Decided
 * @property {string} run
 * @property {string} call
 * @property {Choice} choice
 * @property {string} channel
 * @property {string} status
 * @property {number} waiting
 * @property {string} next
 */

/** A refusal or failure of the API. */
export class APIError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** @type {string} */
let csrf = "";

/**
 * Sets the CSRF token sent with every request that changes something.
 * @param {string | undefined} token
 */
export function setCSRF(token) {
  csrf = token ?? "";
}

/**
 * @param {Response} res
 * @returns {Promise<unknown>}
 */
async function body(res) {
  /** @type {unknown} */
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  if (!res.ok) {
    let code = "error";
    let message = `the console answered ${res.status}`;
    if (data && typeof data === "object" && "error" in data) {
      const e = /** @type {{error: {code?: string, message?: string}}} */ (data).error;
      code = e.code ?? code;
      message = e.message ?? message;
    }
    throw new APIError(res.status, code, message);
  }
  return data;
}

/** What a request meets when nothing answers on the page's port. */
export const UNREACHABLE =
  "The console is not answering: `capabilities hub console` (or the agent's hub that opened this page) stopped, or the page expired. Run `capabilities hub console` for a new page.";

/**
 * fetch, with a request nothing answered (the console stopped) as an
 * APIError of status 0 that says so, not the browser's "Failed to fetch".
 * @param {string} path
 * @param {RequestInit} init
 * @returns {Promise<Response>}
 */
async function send(path, init) {
  try {
    return await fetch(path, init);
  } catch {
    throw new APIError(0, "unreachable", UNREACHABLE);
  }
}

/**
 * GETs a JSON resource.
 * @template T
 * @param {string} path
 * @returns {Promise<T>}
 */
export async function get(path) {
  const res = await send(path, { credentials: "same-origin", cache: "no-store" });
  return /** @type {T} */ (await body(res));
}

/**
 * POSTs JSON with the CSRF token.
 * @template T
 * @param {string} path
 * @param {unknown} payload
 * @returns {Promise<T>}
 */
export async function post(path, payload) {
  const res = await send(path, {
    method: "POST",
    credentials: "same-origin",
    cache: "no-store",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
    body: JSON.stringify(payload),
  });
  return /** @type {T} */ (await body(res));
}

/**
 * Records a decision on one pending call.
 * @param {Approval} item
 * @param {Choice} choice
 * @returns {Promise<Decided>}
 */
export function decide(item, choice) {
  return post(`/api/approvals/${encodeURIComponent(item.run)}/${encodeURIComponent(item.id)}`, { choice });
}

/**
 * Resumes an interrupted run, or cancels a run.
 * @param {string} run
 * @param {"resume" | "cancel"} what
 * @returns {Promise<RunAction>}
 */
export function runAction(run, what) {
  return post(`/api/runs/${encodeURIComponent(run)}/${what}`, {});
}

/**
 * Reads the whole arguments of a pending call whose preview shortened them.
 * @param {Approval} item
 * @returns {Promise<unknown>}
 */
export async function fullArgs(item) {
  /** @type {{args: unknown}} */
  const res = await get(`/api/approvals/${encodeURIComponent(item.run)}/${encodeURIComponent(item.id)}/args`);
  return res.args;
}

/** @typedef {"read" | "write" | "destructive"} Effect */
/** @typedef {"allow" | "ask" | "deny"} Action */

/**
 * A new or changed tool awaiting review (GET /api/review).
 * @typedef {object} ReviewItem
 * @property {string} address
 * @property {string} contract
 * @property {string} [title]
 * @property {string} summary
 * @property {string} description
 * @property {Effect} effect
 * @property {"new" | "changed"} status
 * @property {Action} proposal
 * @property {string[]} [changes] line diffs against the reviewed contract
 * @property {{target: string, action: Action}} [sourceRule] the rule on the whole source that decides the tool instead, once reviewed
 */

/**
 * A stdio command awaiting consent.
 * @typedef {object} CommandConsent
 * @property {string} namespace
 * @property {string} command the digest (sha256:…) the page consents to the command by
 * @property {string} [shown] the command as shown: credentials in its arguments masked
 */

/**
 * A reviewed tool its source no longer lists.
 * @typedef {object} RemovedTool
 * @property {string} address
 * @property {string} contract
 * @property {string} [description]
 */

/**
 * GET /api/review.
 * @typedef {object} Inbox
 * @property {ReviewItem[]} items
 * @property {CommandConsent[] | null} commands
 * @property {RemovedTool[] | null} removed
 * @property {boolean} [readOnly]
 */

/**
 * What POST /api/review answers.
 * @typedef {object} Accepted
 * @property {number} accepted
 * @property {number} commands
 * @property {number} removed
 */

/**
 * One run (GET /api/runs).
 * @typedef {object} RunRow
 * @property {string} id
 * @property {string} status
 * @property {number} attempts
 * @property {number} waiting
 * @property {string} createdAt
 * @property {string} updatedAt
 */

/**
 * A person's decision on a call.
 * @typedef {object} CallDecision
 * @property {Choice} choice
 * @property {string} channel
 * @property {string} at
 */

/**
 * One call of a run: `at` is when it ended (when it started, for a call in
 * flight), `ms` how long it took.
 * @typedef {object} Call
 * @property {number} seq
 * @property {string} address
 * @property {string} [connection]
 * @property {boolean} ok
 * @property {{code: string, message: string, hint?: string}} [error]
 * @property {number} ms
 * @property {string} at
 * @property {boolean} [inFlight]
 * @property {CallDecision} [decision]
 * @property {boolean} [repeated] a read made again on resume: an interrupted attempt had sent it
 */

/**
 * GET /api/runs/{run}.
 * @typedef {object} RunDetail
 * @property {RunRow} run
 * @property {string} code
 * @property {{status: string, error?: {code?: string, message?: string}, logs?: string[] | null, notices?: string[] | null} | null} envelope
 * @property {Call[]} calls
 */

/**
 * GET /api/settings and what POST /api/settings answers.
 * @typedef {object} Settings
 * @property {boolean} raiseApprovals
 * @property {boolean} paused
 * @property {number} runRetentionDays runs that ended longer ago are deleted
 * @property {number} runRetentionMB beyond this, the oldest runs that ended are deleted
 */

/**
 * A skill in an agent's skills folder (GET /api/import).
 * @typedef {object} ImportSkill
 * @property {string} name
 * @property {string} description
 * @property {string} harness
 * @property {string} path
 * @property {"import" | "in-hub" | "clash" | "unreadable" | "imported"} status
 * @property {string} [error]
 */

/**
 * The Runs screen's filters (GET /api/runs's query): "" is any.
 * @typedef {object} RunFilter
 * @property {string} status
 * @property {string} since an age: 1h, 24h, 7d
 * @property {string} namespace
 */

/**
 * One source (GET /api/sources).
 * @typedef {object} SourceInfo
 * @property {string} namespace
 * @property {string} kind
 * @property {string} [serverName]
 * @property {string} [serverVersion]
 * @property {string} [url]
 * @property {string} [command]
 * @property {string} health
 * @property {string} [lastError]
 * @property {string} [checkedAt]
 * @property {{address: string, title?: string, summary: string, effect: Effect}[] | null} tools
 * @property {{name: string, default: boolean, createdAt: string}[] | null} connections
 */

/**
 * Accepts exactly what the Review screen showed: each tool at the contract
 * shown (with the person's action when it differs from the proposal), each
 * command as shown, and the removals shown.
 * @param {Inbox} shown
 * @param {Record<string, Action>} actions by address
 * @returns {Promise<Accepted>}
 */
export function acceptReview(shown, actions) {
  return post("/api/review", {
    items: shown.items.map((it) => {
      const a = actions[it.address];
      return a && a !== it.proposal ? { address: it.address, contract: it.contract, action: a } : { address: it.address, contract: it.contract };
    }),
    commands: shown.commands ?? [],
    removed: (shown.removed ?? []).map((r) => r.address),
  });
}
