// The Redoc page works with no other origin: served at /docs, and opened from disk
// (generated/docs.html). Every request to another origin is aborted and counted (none may even be
// attempted), and the policy's refusals are collected; then the search finds an operation, a menu
// link opens the operation's section under its URL fragment, its request samples show the curl and
// the typed-client sample, a response sample opens and expands, the error reasons' descriptions
// render as text (not as numbered list items), and a guide's entry of the menu's
// Guides group and one of its headings open that part of the guide.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import type { BrowserContext, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { docsPath } from "../../src/core/package-root.js";
import { serverAndBrowserForFile, type TestBrowser } from "../support/browser.js";
import { rawRequest } from "../support/raw-http.js";
import type { TestServer } from "../support/server.js";

let ts: TestServer;
let browser: TestBrowser;
serverAndBrowserForFile((server, opened) => {
  ts = server;
  browser = opened;
});

const SUSPEND = "subjectapplimits/svc.api.funds.v1.subjectapplimitservice.suspend";
const SUSPEND_PATH = "/api/v1/funds/subject-app-limits/{user_id}/{app_id}/suspension";

interface Violation {
  directive: string;
  blocked: string;
}

/** A page on which every request to another origin is aborted and recorded, with the CSP's refusals. */
async function guardedPage(context: BrowserContext, origin: string): Promise<{ page: Page; elsewhere: string[]; violations: () => Promise<Violation[]> }> {
  const page = await context.newPage();
  const elsewhere: string[] = [];
  const foreign = (url: string) => /^(https?|wss?):/.test(url) && new URL(url).origin !== origin;
  // "request" also sees what the CSP refuses before it reaches the network; the route aborts the rest.
  page.on("request", (r) => void (foreign(r.url()) && elsewhere.push(r.url())));
  await page.route((url) => foreign(url.href), (route) => route.abort("blockedbyclient"));
  // A string, run in the page: the tests are typed for Node, without the DOM's globals.
  await page.addInitScript(`
    globalThis.__violations = [];
    document.addEventListener("securitypolicyviolation", (e) => globalThis.__violations.push({ directive: e.violatedDirective, blocked: e.blockedURI }));
  `);
  return { page, elsewhere, violations: () => page.evaluate<Violation[]>("globalThis.__violations") };
}

async function useTheReference(page: Page): Promise<void> {
  // Search: the box says "Loading..." until Redoc has started and indexed the contract (forever if
  // Redoc could not be loaded); then it opens a dialog, and typing an operation's name lists it with its path.
  await page.getByText("Loading...").waitFor({ state: "detached", timeout: 20_000 });
  await page.getByTestId("search-trigger").getByText("Search").click();
  await page.getByPlaceholder("Search docs...").fill("Suspend");
  const results = page.getByTestId("search-dialog").locator("[data-component-name='Search/SearchItem']");
  await results.filter({ hasText: SUSPEND_PATH }).first().waitFor({ timeout: 15_000 });
  await page.keyboard.press("Escape");

  // The menu: open the tag, click the operation; its section shows under its URL fragment.
  await page.locator("[data-component-name='Menu/Menu']").getByText("SubjectAppLimits", { exact: true }).click();
  await page.locator(`[data-component-name='Menu/Menu'] a[href="#/${SUSPEND}"]`).click();
  await page.waitForURL(`**#/${SUSPEND}`);
  // Scrolled to: the operation's section (its id is the fragment's) starts at the top of the window.
  const section = page.locator(`[id="${SUSPEND}"][data-section-id="/${SUSPEND}"]`);
  await expect.poll(async () => Math.abs((await section.boundingBox())?.y ?? 1e6), { timeout: 10_000 }).toBeLessThan(100);
  expect(await section.innerText()).toContain(SUSPEND_PATH);

  // The request samples (x-codeSamples, scripts/code-samples.mjs): curl shown first, the typed client chosen from the list.
  const requestSamples = section.locator(".panel-request-samples");
  await requestSamples.getByText('curl -X POST "$BASE_URL/api/v1/funds/subject-app-limits/').waitFor();
  await requestSamples.getByRole("button", { name: "curl", exact: true }).click();
  await page.getByRole("menuitem", { name: "Typed client" }).click();
  await requestSamples.getByText('await client.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/suspension"').waitFor();

  // A response sample: the 404's Status body, whose nested values open with "Expand all".
  const samples = section.locator(".panel-response-samples");
  await samples.getByRole("button", { name: "404", exact: true }).click();
  const code = samples.locator("pre");
  await code.getByText('"details"').waitFor();
  const collapsedText = await code.innerText();
  await samples.getByRole("button", { name: "Expand all" }).click();
  await expect.poll(async () => (await code.innerText()).length).toBeGreaterThan(collapsedText.length);
  const expanded = await code.innerText();
  expect(expanded).toContain('"@type": "type.googleapis.com/google.rpc.ErrorInfo"');
  expect(expanded).toContain('"reason"');

  // The reasons, where an operation's error answer documents them (Responses → 404 → details →
  // ErrorInfo → reason): each description reads as text, its status first. A description opening
  // with "400." was Markdown for an ordered list, shown as a list item numbered 400.
  await section.getByRole("button", { name: "404", exact: true }).first().click(); // the Responses' tab; the samples' comes after
  await section.getByText("details", { exact: true }).first().click();
  await section.getByText("Show 4 properties").first().click(); // ErrorInfo, the first arm of StatusDetail
  const reasons = section.locator("table").filter({ has: page.getByRole("cell", { name: "INVALID_ARGUMENT", exact: true }) });
  await reasons.waitFor({ timeout: 10_000 });
  expect(await reasons.locator("ol, li").count()).toBe(0);
  const described = reasons.getByRole("row").filter({ has: page.getByRole("cell", { name: "ROLE_NOT_ALLOWED", exact: true }) }).locator("td p");
  expect(await described.innerText()).toBe("HTTP 403. The caller's roles may not call this operation.");

  // A guide (openapi/guides/, a tag with no operations): an entry of the menu's Guides group, and
  // each of its headings one below it, whose section shows that part of the guide, tables included.
  const menu = page.locator("[data-component-name='Menu/Menu']");
  await menu.getByText("Guides", { exact: true }).waitFor();
  await menu.getByText("Errors", { exact: true }).click();
  await page.waitForURL("**#/errors");
  await menu.getByText("Idempotency, users and credentials", { exact: true }).click();
  await page.waitForURL("**#/errors/idempotency-users-and-credentials");
  await page.getByRole("cell", { name: "IDEMPOTENCY_KEY_REUSED", exact: true }).waitFor({ timeout: 10_000 });
}

describe("the docs page", () => {
  it("served at /docs: search, menu and samples work, and nothing is requested from another origin", async () => {
    const context = await browser.context("desktop");
    const { page, elsewhere, violations } = await guardedPage(context, new URL(ts.url).origin);
    await page.goto(`${ts.url}/docs`);
    expect(elsewhere).toEqual([]); // the page before CDN-free builds asked cdn.redocly.com for Redoc here
    await useTheReference(page);
    expect(elsewhere).toEqual([]);
    // The one refusal: Redoc's search probes `Function` (for a worker) and, refused, searches in the page.
    expect(await violations()).toEqual([{ directive: "script-src", blocked: "eval" }]);
    await context.close();
  }, 90_000);

  it("opened from disk (generated/docs.html): the same, with no server at all", async () => {
    const context = await browser.context("desktop");
    const { page, elsewhere } = await guardedPage(context, "null");
    await page.goto(pathToFileURL(docsPath).href);
    await useTheReference(page);
    expect(elsewhere).toEqual([]);
    await context.close();
  }, 90_000);
});

describe("how /docs is served", () => {
  it("with a CSP that admits no other origin and only the page's own inline scripts, revalidated by its ETag", async () => {
    const answer = await fetch(`${ts.url}/docs`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toMatch(/^text\/html/);
    expect(answer.headers.get("cache-control")).toBe("no-cache");
    const csp = answer.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toMatch(/script-src( 'sha256-[A-Za-z0-9+/]+=*')+(;|$)/);
    expect(csp).not.toMatch(/https?:|\*|'self'|'unsafe-eval'|script-src[^;]*'unsafe-inline'/);
    expect(answer.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await answer.text()).toBe(readFileSync(docsPath, "utf8"));

    const etag = answer.headers.get("etag");
    expect(etag).toMatch(/^"[\w-]+"$/);
    // As a browser revalidates (fetch() would add `Cache-Control: no-cache`, which asks for the page anew).
    const again = await rawRequest(ts.url, "GET", "/docs", { "If-None-Match": etag! });
    expect(again.status).toBe(304);
    expect(again.text).toBe("");
    expect((await rawRequest(ts.url, "GET", "/docs", { "If-None-Match": '"another-page"' })).status).toBe(200);
  });
});
