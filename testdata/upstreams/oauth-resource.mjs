// An OAuth-protected MCP server for the sign-in tests: a real authorization
// server (oauth2-mock-server, pinned in testdata/npm) and, in front of a real
// MCP server over streamable HTTP (server-everything at EVERYTHING_URL), a
// resource server that checks each bearer token: its JWT signature against
// the authorization server's keys (JWKS), and that the token is still live
// (the admin endpoints below end tokens). Without a valid token it answers 401
// with a WWW-Authenticate Bearer challenge naming its protected resource
// metadata (RFC 9728), which it serves at /.well-known/oauth-protected-resource.
//
// Admin endpoints (for the test, on the resource server):
//   POST /admin/expire  every access token issued so far is refused from now on
//                       (refresh tokens keep working): a server-side expiry
//   POST /admin/revoke  every access and refresh token issued so far is refused
//   GET  /api/openapi.json  an OpenAPI document whose one operation, GET
//                       /api/whoami, needs a token of its oauth2 flow
//   GET  /admin/stats   {authorizations, codeGrants, refreshGrants, resources:[…], scopes:[…],
//                        seen: [Authorization headers' tokens the MCP endpoint got]}
//
// Prints one JSON line when ready: {"mcp": URL, "issuer": URL, "admin": URL}.
// PORT fixes the resource server's port (default: any free one).
import http from "node:http";
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
import { fileURLToPath } from "node:url";
const npmDir = process.env.NPM_DIR || fileURLToPath(new URL("../npm/", import.meta.url));
const mockMain = require.resolve("oauth2-mock-server", { paths: [npmDir] });
const { OAuth2Server } = require(mockMain);
const jose = createRequire(mockMain)("jose");

const upstream = new URL(process.env.EVERYTHING_URL);
const scope = process.env.SCOPE || "mcp:tools";

const as = new OAuth2Server();
await as.issuer.keys.generate("RS256");
await as.start(0, "127.0.0.1");
const issuer = as.issuer.url;
const jwks = jose.createLocalJWKSet({ keys: as.issuer.keys.toJSON() });

const liveAccess = new Set();
const liveRefresh = new Set();
const stats = { authorizations: 0, codeGrants: 0, refreshGrants: 0, refused: 0, resources: [], scopes: [] };

// Every token is unique, as a real server's are: without a jti, two tokens
// issued in the same second with the same claims are the same string
// (RS256 signatures are deterministic), and a token refused before a
// refresh would read as refused again after it.
as.service.on("beforeTokenSigning", (token) => {
  token.payload.jti = randomUUID();
});
as.service.on("beforeAuthorizeRedirect", (_redirect, req) => {
  stats.authorizations++;
  stats.resources.push("authorize:" + (req.query.resource || ""));
  stats.scopes.push(req.query.scope || "");
});
as.service.on("beforeResponse", (resp, req) => {
  const grant = req.body.grant_type;
  stats.resources.push(grant + ":" + (req.body.resource || ""));
  if (grant === "refresh_token") {
    stats.refreshGrants++;
    if (!liveRefresh.has(req.body.refresh_token)) {
      stats.refused++;
      resp.statusCode = 400;
      resp.body = { error: "invalid_grant", error_description: "the refresh token was revoked" };
      return;
    }
    liveRefresh.delete(req.body.refresh_token); // rotated
  } else if (grant === "authorization_code") {
    stats.codeGrants++;
  }
  if (resp.body.access_token) liveAccess.add(resp.body.access_token);
  if (resp.body.refresh_token) liveRefresh.add(resp.body.refresh_token);
});

let self = "";

// bearer checks a request's token (signature and liveness): its claims, or
// null.
async function bearer(req) {
  const auth = req.headers.authorization || "";
  if (!auth.startsWith("Bearer ")) return null;
  const token = auth.slice(7);
  seen.push(token);
  try {
    const { payload } = await jose.jwtVerify(token, jwks, { issuer });
    return liveAccess.has(token) ? payload : null;
  } catch {
    return null;
  }
}

// openAPIDocument describes /api: one operation behind an oauth2
// authorization code flow at the authorization server.
function openAPIDocument() {
  return {
    openapi: "3.0.3",
    info: { title: "Who am I", version: "1.0.0" },
    servers: [{ url: `${self}/api` }],
    components: {
      securitySchemes: {
        signin: { type: "oauth2", flows: { authorizationCode: { authorizationUrl: `${issuer}/authorize`, tokenUrl: `${issuer}/token`, scopes: { "read:me": "read who you are" } } } },
      },
    },
    security: [{ signin: ["read:me"] }],
    paths: {
      "/whoami": {
        get: {
          operationId: "whoami",
          summary: "Who the token belongs to",
          responses: { 200: { description: "the subject", content: { "application/json": { schema: { type: "object", properties: { sub: { type: "string" }, scope: { type: "string" } } } } } } },
        },
      },
    },
  };
}
const seen = [];

function challenge(res, error) {
  let h = `Bearer resource_metadata="${self}/.well-known/oauth-protected-resource/mcp", scope="${scope}"`;
  if (error) h += `, error="${error}"`;
  res.writeHead(401, { "WWW-Authenticate": h, "Content-Type": "application/json" });
  res.end(JSON.stringify({ error: error || "unauthorized" }));
}

const rs = http.createServer(async (req, res) => {
  const url = new URL(req.url, self);
  if (process.env.DEBUG) {
    console.error(Date.now() % 100000, req.method, req.url, req.headers["mcp-method"] || "");
    res.on("finish", () => console.error(Date.now() % 100000, "  ->", req.method, req.url, res.statusCode));
  }
  if (url.pathname.startsWith("/.well-known/oauth-protected-resource")) {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ resource: `${self}/mcp`, authorization_servers: [issuer], scopes_supported: [scope], bearer_methods_supported: ["header"] }));
    return;
  }
  if (url.pathname === "/admin/expire" && req.method === "POST") {
    liveAccess.clear();
    res.end("{}");
    return;
  }
  if (url.pathname === "/admin/revoke" && req.method === "POST") {
    liveAccess.clear();
    liveRefresh.clear();
    res.end("{}");
    return;
  }
  if (url.pathname === "/admin/stats") {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ ...stats, seen }));
    return;
  }
  if (url.pathname === "/api/openapi.json") {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(openAPIDocument()));
    return;
  }
  if (url.pathname === "/api/whoami") {
    const claims = await bearer(req);
    if (!claims) {
      res.writeHead(401, { "WWW-Authenticate": 'Bearer error="invalid_token"', "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: "invalid_token" }));
      return;
    }
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ sub: claims.sub, scope: claims.scope }));
    return;
  }
  if (url.pathname !== "/mcp") {
    res.writeHead(404);
    res.end();
    return;
  }
  const auth = req.headers.authorization || "";
  if (!auth.startsWith("Bearer ")) return challenge(res);
  const token = auth.slice(7);
  seen.push(token);
  try {
    await jose.jwtVerify(token, jwks, { issuer });
  } catch {
    return challenge(res, "invalid_token");
  }
  if (!liveAccess.has(token)) return challenge(res, "invalid_token");
  const headers = { ...req.headers, host: upstream.host };
  delete headers.authorization;
  const up = http.request({ host: upstream.hostname, port: upstream.port, path: upstream.pathname + url.search, method: req.method, headers }, (ur) => {
    res.writeHead(ur.statusCode, ur.headers);
    res.flushHeaders(); // an event stream's headers go out before its first event
    ur.pipe(res);
  });
  up.on("error", (e) => {
    res.writeHead(502);
    res.end(String(e));
  });
  req.pipe(up);
});
rs.listen(Number(process.env.PORT || 0), "127.0.0.1", () => {
  self = `http://127.0.0.1:${rs.address().port}`;
  console.log(JSON.stringify({ mcp: `${self}/mcp`, issuer, admin: `${self}/admin` }));
});
process.on("SIGTERM", () => process.exit(0));
