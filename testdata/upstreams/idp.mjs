// An OpenID provider for the sign-in tests (internal/testenv.StartIDP):
// oauth2-mock-server (pinned in testdata/npm), which approves every
// authorization at once. An admin server lets a test choose what the next ID tokens say:
//   POST /next {"sub", "email", "name", "aud", "nonce", "expIn"}  (each optional)
// Prints one JSON line when ready: {"issuer": URL, "admin": URL}.
import http from "node:http";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const npmDir = process.env.NPM_DIR;
const { OAuth2Server } = require(require.resolve("oauth2-mock-server", { paths: [npmDir] }));

const as = new OAuth2Server();
await as.issuer.keys.generate("RS256");
await as.start(0, "127.0.0.1");

let next = {};
as.service.on("beforeTokenSigning", (token) => {
  const p = token.payload;
  if (next.sub !== undefined) p.sub = next.sub;
  if (next.email !== undefined) p.email = next.email;
  if (next.name !== undefined) p.name = next.name;
  if (next.aud !== undefined) p.aud = next.aud;
  if (next.nonce !== undefined && p.nonce !== undefined) p.nonce = next.nonce;
  if (next.expIn !== undefined) p.exp = Math.floor(Date.now() / 1000) + next.expIn;
});

const admin = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    if (req.method === "POST" && req.url === "/next") {
      next = JSON.parse(body || "{}");
      res.writeHead(204).end();
      return;
    }
    res.writeHead(404).end();
  });
});
admin.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ issuer: as.issuer.url, admin: `http://127.0.0.1:${admin.address().port}` }));
});
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
