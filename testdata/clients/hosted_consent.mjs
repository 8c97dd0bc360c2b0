// The person's browser at a hosted hub's authorization page, in a real
// headless Chromium (playwright-core): it opens the URL (the hub sends it
// through the identity provider's sign-in, which oauth2-mock-server
// approves at once, and back to the consent page), checks the consent
// page, clicks Allow, and waits until the browser has loaded the
// client's redirect (its code delivered). Used by hosted_connector.mjs
// (the connector's sign-in) and, as the browser command `hub login` runs
// (node hosted_consent.mjs URL [REDIRECT-PREFIX]), by the e2e test: one
// JSON line {consent, landed, errors} (or {error}) to CONSENT_OUT.
//
// Environment: BROWSER_EXECUTABLE, PLAYWRIGHT (playwright-core's
// index.mjs), BROWSER_TIMEOUT_MS; CERT_SPKI (the base64 SHA-256 of the
// test server's public key) trusts its certificate.
import { writeFileSync } from "node:fs";
import process from "node:process";
import { pathToFileURL } from "node:url";

export async function consent(url, redirectPrefix) {
  const { chromium } = await import(process.env.PLAYWRIGHT);
  const timeout = Number(process.env.BROWSER_TIMEOUT_MS || 15000);
  // CERT_SPKI: trust exactly the test server's key (Chromium does not
  // read NODE_EXTRA_CA_CERTS or SSL_CERT_FILE).
  const args = process.env.CERT_SPKI ? [`--ignore-certificate-errors-spki-list=${process.env.CERT_SPKI}`] : [];
  const browser = await chromium.launch({ executablePath: process.env.BROWSER_EXECUTABLE, headless: true, timeout, args });
  const errors = [];
  try {
    const ctx = await browser.newContext();
    ctx.setDefaultTimeout(timeout);
    const page = await ctx.newPage();
    page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
    await page.goto(url);
    await page.waitForSelector("button#allow");
    const text = await page.textContent("body");
    const landed = page.waitForURL((u) => u.href.startsWith(redirectPrefix), { waitUntil: "load" });
    await page.click("button#allow");
    await landed;
    return { consent: text.replace(/\s+/g, " ").trim(), landed: page.url(), errors };
  } finally {
    await browser.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  // As a browser command (CAPABILITIES_BROWSER="node hosted_consent.mjs"):
  // the link is the last argument; the answer goes to CONSENT_OUT when
  // set (the opener's output goes nowhere), else to stdout.
  const [url, prefix = "http://127.0.0.1:"] = process.argv.slice(2);
  const write = (obj) => {
    const line = JSON.stringify(obj) + "\n";
    if (process.env.CONSENT_OUT) writeFileSync(process.env.CONSENT_OUT, line);
    else process.stdout.write(line);
  };
  consent(url, prefix).then(
    (r) => {
      write(r);
      process.exit(0);
    },
    (e) => {
      write({ error: e && e.stack ? e.stack : String(e) });
      process.exit(2);
    },
  );
}
