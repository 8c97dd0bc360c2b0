// A connector to a hosted hub, as claude.ai's or ChatGPT's: the
// TypeScript SDK 1.x client over streamable HTTP with its OAuth provider.
// Its first connect is refused (401); the SDK finds the authorization
// server (RFC 9728, RFC 8414), registers (RFC 7591) and sends the person
// to authorize (PKCE, resource), where hosted_consent.mjs signs in and
// clicks Allow in Chromium; the code comes back to this script's loopback
// redirect and the SDK exchanges it. Then its access token is spoiled and
// the SDK refreshes (the refresh token rotated); then search, describe,
// execute (a read), and WRITES executes of writer.record, each asking.
//
// Environment: HUB_URL (https://…), WRITES (default 1), and
// hosted_consent.mjs's; NODE_EXTRA_CA_CERTS trusts the test CA.
// Prints one JSON object.
import http from "node:http";
import process from "node:process";
import { createRequire } from "node:module";
import { consent } from "./hosted_consent.mjs";

const require = createRequire(import.meta.url);
const sdk = (p) => require(require.resolve(`@modelcontextprotocol/sdk/${p}`, { paths: [new URL("../npm", import.meta.url).pathname] }));
const { Client } = sdk("client/index.js");
const { StreamableHTTPClientTransport } = sdk("client/streamableHttp.js");
const { UnauthorizedError } = sdk("client/auth.js");

const hub = process.env.HUB_URL;
const writes = Number(process.env.WRITES || 1);
const out = { consent: "", refreshed: false, rotated: false, search: "", describe: "", read: null, writes: [] };

// The loopback redirect: the browser lands here with the code.
let gotCode;
const codeP = new Promise((resolve) => (gotCode = resolve));
const cb = http.createServer((req, res) => {
  const u = new URL(req.url, "http://127.0.0.1");
  res.writeHead(200, { "Content-Type": "text/plain" }).end("signed in; close this window");
  if (u.pathname === "/callback") gotCode(u.searchParams.get("code"));
});
await new Promise((r) => cb.listen(0, "127.0.0.1", r));
const redirect = `http://127.0.0.1:${cb.address().port}/callback`;

let info, tokens, verifier;
const saved = [];
const provider = {
  get redirectUrl() { return redirect; },
  get clientMetadata() {
    return { client_name: "Journey connector", redirect_uris: [redirect], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  },
  clientInformation: () => info,
  saveClientInformation: (i) => { info = i; },
  tokens: () => tokens,
  saveTokens: (t) => { tokens = t; saved.push(t); },
  saveCodeVerifier: (v) => { verifier = v; },
  codeVerifier: () => verifier,
  redirectToAuthorization: async (url) => {
    const r = await consent(url.href, redirect);
    out.consent = r.consent;
    out.authorizeURL = url.href;
    if (r.errors.length) throw new Error(`the consent page logged errors: ${r.errors}`);
  },
};

const endpoint = new URL(hub + "/mcp");
async function connect() {
  const client = new Client({ name: "journey-connector", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(endpoint, { authProvider: provider }));
  return client;
}
const text = (res) => (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

async function main() {
  // Registration, authorization (Chromium), token.
  const first = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  try {
    await new Client({ name: "journey-connector", version: "1.0.0" }).connect(first);
    throw new Error("the first connect was not asked to authorize");
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  await first.finishAuth(await codeP);
  out.clientId = info.client_id;
  out.scope = tokens.scope || "";
  const issued = tokens;
  let client = await connect();
  await client.close();

  // Refresh: the hub refuses a spoiled access token; the SDK refreshes.
  tokens = { ...issued, access_token: "spoiled" };
  client = await connect();
  out.refreshed = tokens.access_token !== "spoiled" && tokens.access_token !== issued.access_token;
  out.rotated = !!tokens.refresh_token && tokens.refresh_token !== issued.refresh_token;
  out.tokensSaved = saved.length;

  const tools = await client.listTools();
  out.tools = tools.tools.map((t) => t.name).sort();
  out.search = text(await client.callTool({ name: "search", arguments: { query: "record an item" } }));
  out.describe = text(await client.callTool({ name: "describe", arguments: { targets: ["writer.record"] } }));
  out.read = (await client.callTool({ name: "execute", arguments: { code: `return await everything.echo({message: "hi from the connector"})` } })).structuredContent;
  for (let i = 0; i < writes; i++) {
    const res = await client.callTool({ name: "execute", arguments: { code: `return await writer.record({item: "journey ${i}"})` } });
    out.writes.push({ text: text(res), env: res.structuredContent });
  }
  await client.close();

  // The connector's token (scope mcp) does not open the person's API.
  const api = await fetch(hub + "/api/status", { headers: { Authorization: `Bearer ${tokens.access_token}` } });
  out.apiStatus = api.status;
}

main().then(
  () => {
    process.stdout.write(JSON.stringify(out) + "\n");
    process.exit(0);
  },
  (e) => {
    process.stderr.write(`hosted_connector: ${e && e.stack ? e.stack : e}\n${JSON.stringify(out)}\n`);
    process.exit(2);
  },
);
