// A browser for the tests: CAPABILITIES_BROWSER="node record_link.mjs" makes
// the hub hand it the approval page's one-time link as its last argument; it
// appends the link to the file PAGE_LINKS names, one line per page opened,
// and exits. page_stdio.mjs then opens the link as a browser would.
import fs from "node:fs";
import process from "node:process";

const link = process.argv[process.argv.length - 1];
const file = process.env.PAGE_LINKS;
if (!file) {
  process.stderr.write("record_link: PAGE_LINKS is not set\n");
  process.exit(2);
}
fs.appendFileSync(file, link + "\n");
