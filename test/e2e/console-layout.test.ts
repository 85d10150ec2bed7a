// The console's tables in a real browser at 1280 × 800 and 390 × 844, filled with long names, app
// ids, destinations and changes: nothing scrolls sideways (the page, a table, a box in it), every
// column header lies within the viewport (the audit trail's When, Operation, Target, By and Change
// at 1280), and on a phone each row is a card of cells stacked one under the other, each labelled.
import { describe, expect, it } from "vitest";
import { unwrap } from "../../src/client/index.js";
import { serverAndBrowserForFile, screenshot, type TestBrowser } from "../support/browser.js";
import { failedDestination } from "../support/destinations.js";
import { BOOTSTRAP, type TestServer } from "../support/server.js";
import { createHooked, expectAccepted, sendHmac, settled } from "../http/webhooks/helpers.js";
import { openConsole } from "./console-helpers.js";

let ts: TestServer;
let browser: TestBrowser;

serverAndBrowserForFile((server, opened) => {
  ts = server;
  browser = opened;
});

const SIZES = [
  { name: "desktop", width: 1280, height: 800 },
  { name: "phone", width: 390, height: 844 },
] as const;

/** What the checks read of the page: its width, each box that may scroll sideways, each table's headers and rows. */
interface Layout {
  viewport: number;
  page: { scrollWidth: number; clientWidth: number };
  scrollers: { what: string; scrollWidth: number; clientWidth: number }[];
  tables: {
    headers: { text: string; left: number; right: number; shown: boolean }[];
    rows: { label: string | null; before: string; left: number; right: number; top: number; bottom: number }[][];
  }[];
}

// A string, evaluated in the page: the tests are typed for Node, without the DOM's globals.
const MEASURE = `(() => {
  const root = document.documentElement;
  const box = (el) => el.getBoundingClientRect();
  const scrolls = (el) => ["auto", "scroll"].includes(getComputedStyle(el).overflowX);
  return {
    viewport: window.innerWidth,
    page: { scrollWidth: root.scrollWidth, clientWidth: root.clientWidth },
    scrollers: [...document.querySelectorAll("main *")].filter((el) => el.tagName === "TABLE" || scrolls(el))
      .map((el) => ({ what: el.tagName + "." + el.className, scrollWidth: el.scrollWidth, clientWidth: el.clientWidth })),
    tables: [...document.querySelectorAll("main table")].map((table) => ({
      headers: [...table.tHead.rows[0].cells].map((th) => ({ text: th.textContent, left: box(th).left, right: box(th).right, shown: box(th).width > 1 && getComputedStyle(th).visibility === "visible" })),
      rows: [...table.tBodies[0].rows].map((tr) => [...tr.cells].map((td) => ({
        label: td.getAttribute("data-label"), before: getComputedStyle(td, "::before").content,
        left: box(td).left, right: box(td).right, top: box(td).top, bottom: box(td).bottom,
      }))),
    })),
  };
})()`;

/** Checks the page as it is now at `width`; answers what was measured. */
async function expectFits(page: import("playwright-core").Page, width: number): Promise<Layout> {
  // Every change's details open: the longest content a reader can unfold is laid out too.
  await page.evaluate(`document.querySelectorAll("main details").forEach((d) => { d.open = true; })`);
  const layout = await page.evaluate<Layout>(MEASURE);
  expect(layout.viewport).toBe(width);
  expect(layout.page.scrollWidth, "the page scrolls sideways").toBeLessThanOrEqual(layout.page.clientWidth);
  for (const s of layout.scrollers) expect(s.scrollWidth, `${s.what} scrolls sideways`).toBeLessThanOrEqual(s.clientWidth);
  for (const table of layout.tables) {
    for (const h of table.headers) {
      expect(h.left, `header ${h.text}`).toBeGreaterThanOrEqual(0);
      expect(h.right, `header ${h.text}`).toBeLessThanOrEqual(width);
    }
    if (width > 640) {
      expect(table.headers.filter((h) => !h.shown)).toEqual([]);
      continue;
    }
    // A phone: each row is a card, its cells one under the other, each labelled by its column's header.
    for (const cells of table.rows) {
      cells.forEach((cell, i) => {
        expect(cell.label).toBe(table.headers[i]!.text);
        expect(cell.before).not.toMatch(/^(none|normal)$/);
        expect(cell.right).toBeLessThanOrEqual(width);
        if (i > 0) expect(cell.top).toBeGreaterThanOrEqual(cells[i - 1]!.bottom - 1);
      });
    }
  }
  return layout;
}

// Long content of every kind a cell holds: a name of many words, an id without a space, JSON.
const LONG_NAME = "Maximiliana Featherstonehaugh-Cholmondeley of Procurement and Regional Travel Operations";
const LONG_APP = `app-${"regional-procurement.travel-expenses_".repeat(3)}emea`;
const LONG_REASON = `Card reported lost while travelling; ticket ${"INC0012345678901234567890".repeat(6)} opened by the service desk`;
const usd = (units: string) => ({ amount: { money: { currencyCode: "USD", units, nanos: 0 } } });

async function fill(): Promise<{ userId: string; automationId: string }> {
  const subject = await ts.userClient(["ROLE_USER"], LONG_NAME);
  const path = { user_id: subject.userId, app_id: LONG_APP };
  unwrap(await ts.admin.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", { params: { path }, body: { limit: usd("250"), period: "PERIOD_KIND_MONTHLY" } }));
  unwrap(await ts.admin.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/suspension", { params: { path }, body: { reason: LONG_REASON } }));
  unwrap(await ts.admin.DELETE("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/suspension", { params: { path } }));
  unwrap(await ts.admin.POST("/api/v1/funds/app-caps/{app_id}", { params: { path: { app_id: LONG_APP } }, body: { controls: { limit: usd("1000"), period: "PERIOD_KIND_WEEKLY" } } }));
  for (const capture of [false, true]) {
    const body = { userId: subject.userId, appId: LONG_APP, amount: { currencyCode: "USD", units: "12", nanos: 500_000_000 }, capture };
    unwrap(await ts.admin.POST("/api/v1/funds/spend-authorizations", { params: { header: { "Idempotency-Key": crypto.randomUUID() } }, body }));
  }
  const host = `${"notifications-gateway-primary.eu-west-1.partner-integrations.".repeat(3)}example.com`;
  await failedDestination(ts.databaseUrl, `${host}:8443`, new Date(ts.clock.now()).toISOString());
  // A run, so that the automation list has a "Last run".
  const hook = await createHooked(ts, { displayName: `${LONG_NAME}: tell the partner about every new hire` });
  await settled(ts, expectAccepted(await sendHmac(ts, hook.url, hook.secret)).automationExecutionId!);
  return { userId: subject.userId, automationId: hook.id };
}

describe("the console's tables fit the screen", () => {
  it("at 1280 × 800 and 390 × 844: no sideways scrolling, headers within the viewport, a card per row on a phone", async () => {
    const { userId, automationId } = await fill();
    // Each view: its heading (the view shown is the new one), then the first row of each of its lists.
    const views = [
      { name: "automations", path: "#/automations", heading: 'h1:text-is("Automations")', rows: ["main tbody tr"] },
      { name: "automation", path: `#/automations/${automationId}`, heading: 'h1:has-text("about every new hire")', rows: ['[data-testid="delivery"]'] },
      { name: "destinations", path: "#/destinations", heading: 'h1:text-is("Notification destinations")', rows: ['[data-testid="destination"]'] },
      { name: "limits", path: "#/limits", heading: 'h1:text-is("Fund limits")', rows: ["main tbody tr"] },
      { name: "limit-row", path: `#/limits/${userId}/${LONG_APP}`, heading: `h1[title="${userId}"]`, rows: ['[data-testid="audit-event"]', '[data-testid="authorization"]'] },
      { name: "spends", path: "#/spends", heading: 'h1:text-is("Spend authorizations")', rows: ['[data-testid="authorization"]'] },
      { name: "caps", path: "#/caps", heading: 'h1:text-is("App caps and fund policy")', rows: [".cards > li"] },
      { name: "audit", path: "#/audit", heading: 'h1:text-is("Audit trail")', rows: ['[data-testid="audit-event"]'] },
    ];
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP);
    for (const size of SIZES) {
      await page.setViewportSize({ width: size.width, height: size.height });
      for (const view of views) {
        await page.goto(`${ts.url}/console/${view.path}`);
        await page.locator(view.heading).waitFor();
        for (const rows of view.rows) await page.locator(rows).first().waitFor();
        const layout = await expectFits(page, size.width);
        await screenshot(page, `layout-${view.name}-${size.name}`);
        if (view.name === "audit" && size.name === "desktop") {
          expect(layout.tables[0]!.headers.map((h) => h.text)).toEqual(["When", "Operation", "Target", "By", "Change"]);
        }
      }
    }
    await context.close();
  }, 180_000);
});
