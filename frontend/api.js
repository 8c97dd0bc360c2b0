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
 * @property {string} [reason]
 * @property {string} message
 * @property {string} [expiresAt]
 * @property {Choice[]} choices
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

/**
 * GETs a JSON resource.
 * @template T
 * @param {string} path
 * @returns {Promise<T>}
 */
export async function get(path) {
  const res = await fetch(path, { credentials: "same-origin", cache: "no-store" });
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
  const res = await fetch(path, {
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
