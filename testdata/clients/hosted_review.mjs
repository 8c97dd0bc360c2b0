// The person reviews the tools a push brought to the hosted hub, in the
// dashboard in a real headless Chromium (playwright-core): opens
// URL#review, signs in through the provider (oauth2-mock-server approves
// at once), follows the dashboard's "Open the dashboard" link page when
// the sign-in's redirects began at another site, clicks Accept on the
// Review screen and waits for its confirmation. Prints one JSON line:
// {status (of POST /api/review), accepted (the confirmation), errors}.
//
// Environment: BROWSER_EXECUTABLE, PLAYWRIGHT, BROWSER_TIMEOUT_MS,
// IGNORE_HTTPS_ERRORS=1 (the test CA's certificate). Argument: the
// dashboard's URL.
import process from "node:process";

const [url] = process.argv.slice(2);
const { chromium } = await import(process.env.PLAYWRIGHT);
const timeout = Number(process.env.BROWSER_TIMEOUT_MS || 15000);
const browser = await chromium.launch({ executablePath: process.env.BROWSER_EXECUTABLE, headless: true, timeout });
const errors = [];
try {
  const ctx = await browser.newContext({ ignoreHTTPSErrors: process.env.IGNORE_HTTPS_ERRORS === "1" });
  ctx.setDefaultTimeout(timeout);
  const page = await ctx.newPage();
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
  await page.goto(url + "#review");
  for (let i = 0; i < 3 && (await page.locator("a#open").count()) > 0; i++) {
    await Promise.all([page.waitForNavigation(), page.click("a#open")]);
  }
  // The link page is answered 403, which Chromium logs as an error.
  errors.length = 0;
  if (!page.url().includes("#review")) await page.goto(new URL("/#review", page.url()).href);
  await page.waitForSelector("button#review-accept:not([disabled])");
  const answered = page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname === "/api/review");
  await page.click("button#review-accept");
  const resp = await answered;
  const accepted = await page.textContent('[data-testid="review-accepted"]');
  console.log(JSON.stringify({ status: resp.status(), accepted, errors }));
} finally {
  await browser.close();
}
