// Fund limits in the console, in a real browser against a real server: a fund administrator finds
// a subject's row, suspends it with a reason and sees the effective limit turn to deny (and back on
// unsuspend), sets and clears an extension; caps and the policy; a ROLE_USER sees only their own
// limits and sets one. Screenshots at 1280 px and at phone width.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../src/client/index.js";
import { launchBrowser, screenshot, type TestBrowser } from "../support/browser.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { expectNoHorizontalScroll, openConsole } from "./console-helpers.js";

let ts: TestServer;
let browser: TestBrowser;

beforeAll(async () => {
  ts = await startTestServer();
  ts.clock.set(Date.now()); // extensions expire against the server's clock; the browser picks dates in real time
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await ts?.stop();
});

const usd = (units: string) => ({ amount: { money: { currencyCode: "USD", units, nanos: 0 } } });

describe("fund limits in the console", () => {
  it("a fund administrator finds a row, suspends it (effective: deny), unsuspends it, and sets and clears an extension", async () => {
    const admin = await ts.userClient(["ROLE_FUND_ADMIN"], "Fund admin");
    const subject = await ts.userClient(["ROLE_USER"], "Subject");
    for (const app of ["app-salesforce", "app-github"]) {
      unwrap(await ts.admin.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", { params: { path: { user_id: subject.userId, app_id: app } }, body: { limit: usd("250"), period: "PERIOD_KIND_MONTHLY" } }));
    }
    const { context, page } = await openConsole(browser, "desktop", ts.url, admin);
    // A fund administrator has no automations: the console opens on the limits and hides the rest.
    await page.getByRole("heading", { name: "Fund limits" }).waitFor();
    expect(await page.getByRole("link", { name: "Automations" }).count()).toBe(0);

    await page.getByLabel("User ids").fill(subject.userId);
    await page.getByLabel("App ids").fill("app-salesforce");
    await page.getByRole("button", { name: "Search" }).click();
    await page.locator("tbody tr").first().waitFor();
    expect(await page.locator("tbody tr").count()).toBe(1);
    await screenshot(page, "limits-search-desktop");
    await page.getByRole("link", { name: subject.userId }).click();

    await page.getByTestId("effective-decision").getByText("limit").waitFor();
    expect(await page.getByTestId("controls-limit").textContent()).toBe("USD 250 per monthly");
    const suspension = page.getByRole("region", { name: "Suspension" });
    await suspension.getByLabel("Reason").fill("Card reported lost");
    await suspension.getByRole("button", { name: "Suspend" }).click();
    await page.getByTestId("effective-decision").getByText("deny").waitFor();
    expect(await page.getByTestId("controls-suspension").textContent()).toContain("Card reported lost");
    expect(await page.getByRole("list", { name: "Resolution trace" }).textContent()).toContain("SCOPE_SUBJECT_APP: suspended");
    await screenshot(page, "limit-suspended-desktop");

    await suspension.getByRole("button", { name: "Unsuspend" }).click();
    await page.getByTestId("effective-decision").getByText("limit").waitFor();
    expect(await page.getByTestId("controls-limit").textContent()).toBe("USD 250 per monthly");

    // An extension in a week: the effective limit is the extension's; then cleared.
    const extension = page.getByRole("region", { name: "Extension" });
    await extension.getByLabel("Amount (USD)").fill("500.25");
    const inAWeek = new Date(Date.now() + 7 * 86_400_000);
    const local = new Date(inAWeek.getTime() - inAWeek.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await extension.getByLabel("Expires at").fill(local);
    await extension.getByLabel("Reason (visible to the subject)").fill("Quarter-end travel");
    await extension.getByRole("button", { name: "Set extension" }).click();
    await page.getByTestId("controls-extension").getByText("USD 500.25").waitFor();
    expect(await page.getByRole("region", { name: "Effective limit" }).textContent()).toContain("USD 500.25");
    await extension.getByRole("button", { name: "Clear extension" }).click();
    await page.getByTestId("controls-extension").getByText("none").waitFor();

    // A bad amount is said in words next to its form, and nothing is sent.
    const base = page.getByRole("region", { name: "Base limit" });
    await base.getByLabel("Amount (USD)").fill("-3");
    await base.getByRole("button", { name: "Set limit" }).click();
    await base.getByRole("alert").getByText("Enter an amount").waitFor();
    await screenshot(page, "limit-row-desktop");

    // App caps and the fund policy.
    await page.getByRole("link", { name: "Caps and policy" }).click();
    const caps = page.getByRole("region", { name: "App caps" });
    await caps.getByLabel("App id").fill("app-github");
    await caps.getByLabel("Amount (USD)").fill("1000");
    await caps.getByRole("button", { name: "Set cap" }).click();
    await caps.getByRole("heading", { name: "app-github" }).waitFor();
    const policy = page.getByRole("region", { name: "Fund policy" });
    await policy.getByLabel("Limit").selectOption("unlimited");
    await policy.getByRole("button", { name: "Set default" }).click();
    await policy.getByTestId("controls-limit").getByText("unlimited").waitFor();
    await screenshot(page, "caps-policy-desktop");
    await context.close();

    const { context: phone, page: small } = await openConsole(browser, "phone", ts.url, admin, { path: `#/limits/${subject.userId}/app-salesforce` });
    await small.getByTestId("effective-decision").waitFor();
    await expectNoHorizontalScroll(small);
    await screenshot(small, "limit-row-phone");
    await phone.close();
  }, 120_000);

  it("a ROLE_USER sees only their own limits and sets one", async () => {
    const user = await ts.userClient(["ROLE_USER"], "Self-service user");
    const { context, page } = await openConsole(browser, "phone", ts.url, user, { path: "#/limits" });
    await page.getByRole("heading", { name: "My limits" }).waitFor();
    expect(await page.getByRole("navigation", { name: "Main" }).textContent()).toBe("My limits");
    await page.getByText("You have no limits of your own yet.").waitFor();

    await page.getByLabel("App id").fill("app-github");
    await page.getByLabel("Amount (USD)").fill("75.5");
    await page.getByRole("button", { name: "Set my limit" }).click();
    await page.getByRole("heading", { name: "app-github" }).waitFor();
    await page.getByTestId("effective-decision").getByText("limit").waitFor();
    expect(await page.getByTestId("controls-limit").textContent()).toBe("USD 75.50 per monthly");
    const mine = unwrap(await user.client.GET("/api/v1/funds/my/app-limits/{app_id}", { params: { path: { app_id: "app-github" } } }));
    expect(mine.limit.controls?.limit).toEqual({ amount: { money: { currencyCode: "USD", units: "75", nanos: 500_000_000 } }, blocked: null, unlimited: null });
    await expectNoHorizontalScroll(page);
    await screenshot(page, "my-limits-phone");
    await context.close();
  }, 60_000);
});
