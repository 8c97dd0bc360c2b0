// The person's browser at a hosted hub's authorization page, in a real
// headless Chromium (playwright-core): it opens the URL (the hub sends it
// through the identity provider's sign-in, which oauth2-mock-server
// approves at once, and back to the consent page), checks the consent
// page, clicks Allow, and waits until the browser has loaded the
// client's redirect (its code delivered). Used by hosted_connector.mjs
// (the connector's sign-in) and, run as a script, by the e2e test for
// `hub login`: node hosted_consent.mjs URL REDIRECT-PREFIX, printing one
// JSON line {consent, landed, errors}.
//
// Environment: BROWSER_EXECUTABLE, PLAYWRIGHT (playwright-core's
// index.mjs), BROWSER_TIMEOUT_MS; CERT_SPKI (the base64 SHA-256 of the
// test server's public key) trusts its certificate.
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
  const [url, prefix] = process.argv.slice(2);
  consent(url, prefix).then(
    (r) => {
      process.stdout.write(JSON.stringify(r) + "\n");
      process.exit(0);
    },
    (e) => {
      process.stderr.write(`hosted_consent: ${e && e.stack ? e.stack : e}\n`);
      process.exit(2);
    },
  );
}
