// Opens an SVG flamegraph in headless Chromium (playwright-core) in a 1400x1000 window and
// says where the boxes of a function are drawn, so a test can check they are on the first
// screen; takes a screenshot of that screen.
//
// node svg_first_screen.mjs NODE_MODULES FILE.svg FUNCTION SCREENSHOT.png
// Prints one JSON line: {scrollHeight, boxes: [{x, y, width, height}], title}.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [modules, svg, func, shot] = process.argv.slice(2);
const require = createRequire(path.join(modules, "noop.js"));
const { chromium } = require("playwright-core");

const userData = fs.mkdtempSync("/tmp/perfkit-svg-");
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
  await page.goto("file://" + path.resolve(svg));
  await page.waitForTimeout(500);
  await page.screenshot({ path: shot });
  out = await page.evaluate((func) => {
    const boxes = [];
    for (const t of document.querySelectorAll("g > title")) {
      if (!t.textContent.startsWith(func + " (")) continue;
      const r = t.parentNode.querySelector("rect");
      if (!r) continue;
      const b = r.getBoundingClientRect();
      boxes.push({ x: b.x, y: b.y, width: b.width, height: b.height });
    }
    const title = document.querySelector("#title");
    return {
      scrollHeight: document.documentElement.scrollHeight || document.documentElement.getBoundingClientRect().height,
      boxes,
      title: title ? title.textContent : null,
    };
  }, func);
} finally {
  await browser.close();
  fs.rmSync(userData, { recursive: true, force: true });
}
console.log(JSON.stringify(out));
