// The person reviews the tools a push brought to the hosted hub, in the
// dashboard in a real headless Chromium (playwright-core): opens
// URL#review, signs in through the provider (oauth2-mock-server approves
// at once), follows the dashboard's "Open the dashboard" link page when
// the sign-in's redirects began at another site, clicks Accept on the
// Review screen and waits for its confirmation. Prints one JSON line:
// {status (of POST /api/review), accepted (the confirmation), errors (the
// console's and the page's), failed (the requests answered >= 400)}.
//
// Environment: BROWSER_EXECUTABLE, PLAYWRIGHT, BROWSER_TIMEOUT_MS,
// CERT_SPKI (the base64 SHA-256 of the test
// server's public key: its certificate trusted). Argument: the
// dashboard's URL.
import process from "node:process";

const [url] = process.argv.slice(2);
const { chromium } = await import(process.env.PLAYWRIGHT);
const timeout = Number(process.env.BROWSER_TIMEOUT_MS || 15000);
// CERT_SPKI: trust exactly the test server's key (Chromium does not read
// NODE_EXTRA_CA_CERTS or SSL_CERT_FILE).
const args = process.env.CERT_SPKI ? [`--ignore-certificate-errors-spki-list=${process.env.CERT_SPKI}`] : [];
const browser = await chromium.launch({ executablePath: process.env.BROWSER_EXECUTABLE, headless: true, timeout, args });
const errors = [];
try {
  const ctx = await browser.newContext();
  ctx.setDefaultTimeout(timeout);
  const page = await ctx.newPage();
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
  // The requests answered with an error, by path (a console error names
  // no URL).
  const failed = [];
  page.on("response", (r) => {
    if (r.status() >= 400) failed.push(`${r.status()} ${new URL(r.url()).pathname}`);
  });
  await page.goto(url + "#review");
  for (let i = 0; i < 3 && (await page.locator("a#open").count()) > 0; i++) {
    await Promise.all([page.waitForNavigation(), page.click("a#open")]);
  }
  // The link page is answered 403, which Chromium logs as an error.
  errors.length = 0;
  failed.length = 0;
  if (!page.url().includes("#review")) await page.goto(new URL("/#review", page.url()).href);
  await page.waitForSelector("button#review-accept:not([disabled])");
  const answered = page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname === "/api/review");
  await page.click("button#review-accept");
  const resp = await answered;
  const accepted = await page.textContent('[data-testid="review-accepted"]');
  console.log(JSON.stringify({ status: resp.status(), accepted, errors, failed }));
} finally {
  await browser.close();
}
