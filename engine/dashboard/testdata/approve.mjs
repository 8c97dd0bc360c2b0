// A person approves a pending call in the hosted dashboard, in a real
// headless Chromium (playwright-core): opens the dashboard, signs in
// through the provider (oauth2-mock-server approves at once), follows the
// page's "Open the dashboard" link when the sign-in's redirects began at
// another site, waits for the approval dialog about the run and clicks
// "once". Prints one JSON line: the decision's answer, whether the link
// page was met, and the console and page errors seen (a CSP or Trusted
// Types refusal is one).
//
// Environment: BROWSER_EXECUTABLE, PLAYWRIGHT (playwright-core's
// index.mjs), BROWSER_TIMEOUT_MS; IGNORE_HTTPS_ERRORS=1 trusts a test
// server's own certificate. Arguments: the dashboard's URL, the run,
// and optionally another site's page whose link a#go the person clicks to
// come to the dashboard (as from a mail).
const [url, run, from] = process.argv.slice(2);
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
  if (from) {
    await page.goto(from);
    await Promise.all([page.waitForNavigation(), page.click("a#go")]);
  } else {
    await page.goto(url);
  }
  // The link page, each time the way here began at another site (another
  // site's link; a sign-in's redirects through the provider).
  let linkPages = 0;
  for (let i = 0; i < 3 && (await page.locator("a#open").count()) > 0; i++) {
    linkPages++;
    await Promise.all([page.waitForNavigation(), page.click("a#open")]);
  }
  // The link page is answered 403, which Chromium logs as an error; what
  // the dashboard's screens log from here on counts.
  errors.length = 0;
  await page.waitForFunction((run) => {
    const d = document.querySelector("dialog#approval");
    return d instanceof HTMLDialogElement && d.open && (d.querySelector(".card-head")?.textContent ?? "").includes(run);
  }, run);
  const address = await page.textContent("dialog#approval #approval-title");
  const answered = page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname.startsWith("/api/approvals/"));
  await page.click('dialog#approval button[data-choice="once"]');
  const resp = await answered;
  const body = await resp.json();
  // Filter nothing: an expected 4xx would be a console error too.
  console.log(JSON.stringify({ status: resp.status(), body, address, linkPages, url: page.url(), errors }));
} finally {
  await browser.close();
}
