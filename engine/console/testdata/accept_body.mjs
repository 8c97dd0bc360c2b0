// Prints the request the Review screen makes to accept what it shows
// (frontend/api.js acceptReview), over a fetch that records it. Used by
// TestReviewAcceptsWhatIsShown.
//
// usage: node accept_body.mjs <frontend dir> <inbox.json> <actions.json>
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [dir, inboxFile, actionsFile] = process.argv.slice(2);
let sent = null;
globalThis.fetch = async (url, init) => {
  sent = { url: String(url), method: init.method, headers: init.headers, body: JSON.parse(init.body) };
  return new Response(JSON.stringify({ accepted: 0, commands: 0, removed: 0 }), { status: 200, headers: { "Content-Type": "application/json" } });
};
const { acceptReview, setCSRF } = await import(pathToFileURL(path.join(dir, "api.js")).href);
setCSRF("csrf-token");
await acceptReview(JSON.parse(fs.readFileSync(inboxFile, "utf8")), JSON.parse(fs.readFileSync(actionsFile, "utf8")));
process.stdout.write(JSON.stringify(sent));
