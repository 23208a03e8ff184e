// Opens a speedscope export in speedscope's own web app (the `speedscope` npm package),
// served on a free localhost port, in headless Chromium driven by playwright-core; checks
// the file against speedscope's file-format-schema.json with ajv first.
//
// node speedscope.mjs NODE_MODULES PROFILE.json SCREENSHOT.png
// Prints one JSON line: {schemaErrors, title, sandwich: [[name, total, self]...]}.
import { createRequire } from "node:module";
import http from "node:http";
import fs from "node:fs";
import path from "node:path";

const [modules, profilePath, shot] = process.argv.slice(2);
const require = createRequire(path.join(modules, "noop.js"));
const Ajv = require("ajv");
const { chromium } = require("playwright-core");

const release = path.join(modules, "speedscope", "dist", "release");
const schema = JSON.parse(fs.readFileSync(path.join(release, "file-format-schema.json")));
const profile = JSON.parse(fs.readFileSync(profilePath));
const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile(schema);
const schemaErrors = validate(profile) ? [] : validate.errors.slice(0, 5);

const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".json": "application/json", ".wasm": "application/wasm", ".png": "image/png" };
const server = http.createServer((req, res) => {
  const url = decodeURIComponent(req.url.split("?")[0].split("#")[0]);
  const file = url === "/profile.json" ? profilePath : path.join(release, path.normalize(url === "/" ? "/index.html" : url));
  fs.readFile(file, (err, data) => {
    if (err) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { "content-type": types[path.extname(file)] || "application/octet-stream" });
    res.end(data);
  });
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const base = `http://127.0.0.1:${server.address().port}`;
const userData = fs.mkdtempSync("/tmp/perfkit-speedscope-");
const browser = await chromium.launchPersistentContext(userData, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1400, height: 1000 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--use-angle=swiftshader", "--enable-unsafe-swiftshader"],
});
let out = { schemaErrors };
try {
  const page = browser.pages()[0] || (await browser.newPage());
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`${base}/index.html#profileURL=${encodeURIComponent(base + "/profile.json")}`);
  // The toolbar names the loaded profile; the flame chart is drawn on a canvas.
  await page.waitForSelector("canvas", { timeout: 60000 });
  await page.waitForFunction(() => document.title.includes("speedscope") && document.body.innerText.includes("("), null, { timeout: 60000 });
  const toolbar = await page.evaluate(() => document.body.innerText.split("\n").slice(0, 12).join(" | "));
  // Sandwich: a table of functions by self time, in the DOM.
  await page.keyboard.press("3");
  await page.waitForTimeout(1500);
  const rows = await page.evaluate(() => {
    const text = document.body.innerText.split("\n").map((s) => s.trim()).filter(Boolean);
    return text.slice(0, 80);
  });
  // The picture: the sandwich table with its top row selected, whose callers and callees
  // speedscope then draws beside it.
  const top = rows[rows.findIndex((l) => l.includes("Symbol Name")) + 3];
  if (top) {
    try {
      await page.getByText(top, { exact: true }).first().click({ timeout: 5000 });
      await page.waitForTimeout(1500);
    } catch (e) {
      errors.push("selecting " + top + ": " + e);
    }
  }
  await page.screenshot({ path: shot });
  out = { ...out, toolbar, rows, errors };
} finally {
  await browser.close();
  server.close();
  fs.rmSync(userData, { recursive: true, force: true });
}
console.log(JSON.stringify(out));
