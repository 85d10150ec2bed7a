// Debian's Chromium, driven by playwright-core (never a test tool's own browser download):
// headless, no sandbox (tests may run as root), nothing fetched in the background, and a fresh
// profile (playwright gives every launch its own temporary --user-data-dir).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { startTestServer, type TestServer } from "./server.js";

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const ARTIFACTS = fileURLToPath(new URL("../artifacts/", import.meta.url));

export const VIEWPORTS = {
  desktop: { width: 1280, height: 900 },
  phone: { width: 390, height: 844 },
} as const;

export interface TestBrowser {
  browser: Browser;
  /** A new context (its own memory: a fresh sign-in) that may read the clipboard. */
  context(viewport: keyof typeof VIEWPORTS): Promise<BrowserContext>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-quic",
      "--no-first-run",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
    ],
  });
  return {
    browser,
    async context(viewport) {
      const context = await browser.newContext({ viewport: VIEWPORTS[viewport] });
      await context.grantPermissions(["clipboard-read", "clipboard-write"]);
      return context;
    },
    close: () => browser.close(),
  };
}

/** Saves a full-page screenshot as a test artifact: test/artifacts/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** What the page's last copy button put on the clipboard. */
export function clipboard(page: Page): Promise<string> {
  return page.evaluate<string>("navigator.clipboard.readText()");
}

/** A test server and a browser for the file's tests: started before them, closed after. */
export function serverAndBrowserForFile(use: (ts: TestServer, browser: TestBrowser) => void): void {
  let ts: TestServer | undefined;
  let browser: TestBrowser | undefined;
  beforeAll(async () => {
    ts = await startTestServer();
    browser = await launchBrowser();
    use(ts, browser);
  });
  afterAll(async () => {
    await browser?.close();
    await ts?.stop();
  });
}
