// The audit trail in the console, in a real browser against a real server: a fund administrator
// suspends a row and sees the change in the row's history (who, before and after); the audit page
// lists the changes, filtered by target; a user sees the audit page with their own rows only.
import { describe, expect, it } from "vitest";
import { unwrap } from "../../src/client/index.js";
import { serverAndBrowserForFile, screenshot, type TestBrowser } from "../support/browser.js";
import type { TestServer } from "../support/server.js";
import { expectNoHorizontalScroll, openConsole } from "./console-helpers.js";

let ts: TestServer;
let browser: TestBrowser;

serverAndBrowserForFile((server, opened) => {
  ts = server;
  browser = opened;
});

const usd = (units: string) => ({ amount: { money: { currencyCode: "USD", units, nanos: 0 } } });

describe("the audit trail in the console", () => {
  it("a limit row's history shows each change with who made it; the audit page lists and filters the changes", async () => {
    const admin = await ts.userClient(["ROLE_FUND_ADMIN"], "Fund admin");
    const subject = await ts.userClient(["ROLE_USER"], "Subject");
    unwrap(await admin.client.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", { params: { path: { user_id: subject.userId, app_id: "app-salesforce" } }, body: { limit: usd("250"), period: "PERIOD_KIND_MONTHLY" } }));
    unwrap(await admin.client.POST("/api/v1/funds/app-caps/{app_id}", { params: { path: { app_id: "app-zoom" } }, body: { controls: { limit: { blocked: {} } } } }));

    const { context, page } = await openConsole(browser, "desktop", ts.url, admin, { path: `#/limits/${subject.userId}/app-salesforce` });
    const history = page.getByRole("region", { name: "History" });
    await history.getByTestId("audit-event").first().waitFor();
    expect(await history.getByTestId("audit-event").count()).toBe(1);
    expect(await history.getByTestId("audit-event").first().textContent()).toContain("Limit set");

    const suspension = page.getByRole("region", { name: "Suspension" });
    await suspension.getByLabel("Reason").fill("Card reported lost");
    await suspension.getByRole("button", { name: "Suspend" }).click();
    await history.getByText("Suspended", { exact: true }).waitFor();
    const newest = history.getByTestId("audit-event").first();
    expect(await newest.textContent()).toContain(admin.userId);
    expect(await newest.locator("summary").textContent()).toBe("changed");
    await newest.locator("summary").click();
    expect(await newest.locator(".differences").textContent()).toContain('controls.suspension: null → {"reason":"Card reported lost"');
    await screenshot(page, "limit-history-desktop");

    await page.getByRole("link", { name: "Audit trail" }).click();
    await page.getByRole("heading", { name: "Audit trail" }).waitFor();
    await page.getByTestId("audit-event").first().waitFor();
    expect(await page.getByTestId("audit-event").count()).toBe(3);
    await page.getByLabel("Target").selectOption("AUDIT_TARGET_KIND_APP_CAP");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.getByText("app cap app-zoom").waitFor();
    expect(await page.getByTestId("audit-event").count()).toBe(1);
    await expectNoHorizontalScroll(page);
    await screenshot(page, "audit-page-desktop");
    await context.close();
  }, 90_000);

  it("a user's audit page shows the changes to their own rows only", async () => {
    const subject = await ts.userClient(["ROLE_USER"], "Self-service");
    const other = await ts.userClient(["ROLE_USER"], "Someone else");
    for (const user of [subject, other]) {
      unwrap(await ts.admin.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", { params: { path: { user_id: user.userId, app_id: "app-github" } }, body: { limit: usd("40"), period: "PERIOD_KIND_WEEKLY" } }));
    }
    const { context, page } = await openConsole(browser, "phone", ts.url, subject, { path: "#/audit" });
    await page.getByRole("heading", { name: "Audit trail" }).waitFor();
    await page.getByTestId("audit-event").first().waitFor();
    expect(await page.getByTestId("audit-event").count()).toBe(1);
    // A user may not read users (UserService.Get is 403 to it): its own row is named by its id.
    expect(await page.getByTestId("audit-event").first().textContent()).toContain(`${subject.userId} · app-github`);
    expect(await page.getByTestId("audit-event").first().getByTestId("user-name").count()).toBe(0);
    await expectNoHorizontalScroll(page);
    await screenshot(page, "audit-page-phone");
    await context.close();
  });
});
