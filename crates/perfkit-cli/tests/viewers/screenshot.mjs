// Screenshot of a page in headless Chromium (playwright-core), 1400x1000.
//
// node screenshot.mjs NODE_MODULES URL SCREENSHOT.png [WAIT_MS]
// Prints one JSON line: {text} (the page's first lines of text).
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [modules, url, shot, wait] = process.argv.slice(2);
const require = createRequire(path.join(modules, "noop.js"));
const { chromium } = require("playwright-core");

const userData = fs.mkdtempSync("/tmp/perfkit-shot-");
const browser = await chromium.launchPersistentContext(userData, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1400, height: 1000 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let out = {};
try {
  const page = browser.pages()[0] || (await browser.newPage());
  await page.goto(url);
  await page.waitForTimeout(Number(wait || 1000));
  await page.screenshot({ path: shot });
  out.text = await page.evaluate(() => document.body.innerText.slice(0, 2000));
} finally {
  await browser.close();
  fs.rmSync(userData, { recursive: true, force: true });
}
console.log(JSON.stringify(out));
