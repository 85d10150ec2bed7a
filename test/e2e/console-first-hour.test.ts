// What a new administrator meets in the console, in a real browser against a real server: users
// shown by their display names (limit rows, a row's page and history, the audit page, spends),
// limits said as "USD 300 a month", and the page of every spend authorization with its filters
// (user, app, state, window start) and its pages, for super and fund administrators alike.
import { describe, expect, it } from "vitest";
import { unwrap, type ApiClient } from "../../src/client/index.js";
import { serverAndBrowserForFile, screenshot, type TestBrowser } from "../support/browser.js";
import type { TestServer } from "../support/server.js";
import { expectNoHorizontalScroll, openConsole } from "./console-helpers.js";

let ts: TestServer;
let browser: TestBrowser;

serverAndBrowserForFile((server, opened) => {
  ts = server;
  browser = opened;
});

const money = (units: string, nanos = 0) => ({ currencyCode: "USD", units, nanos });

async function setLimit(client: ApiClient, userId: string, appId: string, amount: ReturnType<typeof money>, period: "PERIOD_KIND_MONTHLY" | "PERIOD_KIND_WEEKLY") {
  unwrap(await client.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", { params: { path: { user_id: userId, app_id: appId } }, body: { limit: { amount: { money: amount } }, period } }));
}

/** Authorizes through the API, a second later each time on the server's clock: newest first is then certain. */
async function authorize(userId: string, appId: string, amount: ReturnType<typeof money>) {
  ts.clock.advance(1000);
  const body = { userId, appId, amount, capture: true };
  return unwrap(await ts.admin.POST("/api/v1/funds/spend-authorizations", { params: { header: { "Idempotency-Key": crypto.randomUUID() } }, body })).authorization;
}

async function userEmail(userId: string): Promise<string> {
  return unwrap(await ts.admin.GET("/api/v1/users/{user_id}", { params: { path: { user_id: userId } } })).user.email;
}

describe("a new administrator's first hour in the console", () => {
  it("shows users by name and limits as 'USD 300 a month', and lists every spend authorization with filters and pages", async () => {
    const grace = await ts.userClient(["ROLE_SUPER_ADMIN"], "Grace Hopper");
    const ada = await ts.userClient(["ROLE_USER"], "Ada Lovelace");
    const alan = await ts.userClient(["ROLE_USER"], "Alan Turing");
    await setLimit(grace.client, ada.userId, "app-salesforce", money("300"), "PERIOD_KIND_MONTHLY");
    await setLimit(grace.client, alan.userId, "app-github", money("12", 500_000_000), "PERIOD_KIND_WEEKLY");
    // 26 of Ada's (more than a page of 25) and two of Alan's, the second over his limit.
    for (let i = 0; i < 26; i++) await authorize(ada.userId, "app-salesforce", money("1", 250_000_000));
    const alansFirst = await authorize(alan.userId, "app-github", money("10"));
    const declined = await authorize(alan.userId, "app-github", money("5"));
    expect(declined.state).toBe("SPEND_AUTHORIZATION_STATE_DECLINED");

    const { context, page } = await openConsole(browser, "desktop", ts.url, grace, { path: "#/limits" });
    await page.getByRole("heading", { name: "Fund limits" }).waitFor();
    await page.getByLabel("User ids").fill(`${ada.userId} ${alan.userId}`);
    await page.getByRole("button", { name: "Search" }).click();
    const adaRow = page.getByRole("row").filter({ hasText: "app-salesforce" });
    await adaRow.getByTestId("user-name").getByText("Ada Lovelace").waitFor();
    expect(await adaRow.textContent()).toContain(ada.userId);
    expect(await adaRow.getByRole("cell").nth(2).textContent()).toBe("USD 300 a month");
    const alanRow = page.getByRole("row").filter({ hasText: "app-github" });
    await alanRow.getByTestId("user-name").getByText("Alan Turing").waitFor();
    expect(await alanRow.getByRole("cell").nth(2).textContent()).toBe("USD 12.50 a week");
    await screenshot(page, "first-hour-limits-desktop");

    // The row's page: named in its heading, the limit and the effective limit in words, the history by name.
    await adaRow.getByRole("link").click();
    await page.getByRole("heading", { name: "Ada Lovelace · app-salesforce" }).waitFor();
    expect(await page.getByTestId("row-user-id").textContent()).toBe(ada.userId);
    expect(await page.getByTestId("controls-limit").textContent()).toBe("USD 300 a month");
    await page.getByRole("region", { name: "Effective limit" }).getByText("USD 300 a month", { exact: false }).waitFor();
    const history = page.getByRole("region", { name: "History" });
    await history.getByTestId("audit-event").first().getByText("Grace Hopper").waitFor();
    expect(await history.getByTestId("limit-change").textContent()).toBe("Limit: — → USD 300 a month");
    // A change of the limit and its period, said in words in the row and in its history.
    const base = page.getByRole("region", { name: "Base limit" });
    await base.getByLabel("Amount (USD)").fill("350.5");
    await base.getByLabel("Period").selectOption("PERIOD_KIND_WEEKLY");
    await base.getByRole("button", { name: "Set limit" }).click();
    await page.getByTestId("controls-limit").getByText("USD 350.50 a week").waitFor();
    await history.getByTestId("limit-change").getByText("Limit: USD 300 a month → USD 350.50 a week").waitFor();

    // The audit page: who made the change and whose row it was, by name.
    await page.getByRole("link", { name: "Audit trail" }).click();
    await page.getByLabel("User id", { exact: true }).fill(alan.userId);
    await page.getByRole("button", { name: "Filter" }).click();
    const change = page.getByTestId("audit-event").filter({ hasText: "Limit set" });
    await change.getByText("Alan Turing").waitFor();
    expect(await change.getByTestId("user-name").allTextContents()).toEqual(["Alan Turing", "Grace Hopper"]);
    await screenshot(page, "first-hour-audit-desktop");

    // Every spend authorization, newest first, 25 a page, each with its user by name.
    await page.getByRole("link", { name: "Spends" }).click();
    const spends = page.getByRole("region", { name: "Spend authorizations" });
    const rows = spends.getByTestId("authorization");
    await rows.first().getByTestId("user-name").getByText("Alan Turing").waitFor();
    expect(await rows.count()).toBe(25);
    expect(await rows.first().textContent()).toContain(declined.id);
    await spends.getByRole("button", { name: "Next page" }).click();
    await spends.getByText("Page 2").waitFor();
    expect(await rows.count()).toBe(3);
    expect(await rows.getByTestId("user-name").allTextContents()).toEqual(["Ada Lovelace", "Ada Lovelace", "Ada Lovelace"]);
    await screenshot(page, "first-hour-spends-desktop");

    // The API filters by user id: the user id input offers the users read so far, a name typed finding its id.
    const userInput = spends.getByRole("combobox", { name: "User id", exact: true });
    await userInput.pressSequentially("Ada");
    const suggestion = spends.getByRole("listbox", { name: "Users" }).getByRole("option", { name: /^Ada Lovelace/ });
    expect(await suggestion.textContent()).toBe(`Ada Lovelace ${await userEmail(ada.userId)}`);
    await userInput.press("Enter");
    expect(await userInput.inputValue()).toBe(ada.userId);

    // Filters: by user, then also by state; by app; by the window an authorization was decided in.
    const filter = async (fields: { user?: string; app?: string; state?: string; window?: string }) => {
      await spends.getByLabel("User id", { exact: true }).fill(fields.user ?? "");
      await spends.getByLabel("App id").fill(fields.app ?? "");
      await spends.getByLabel("State").selectOption(fields.state ?? "");
      await spends.getByLabel("Window start (RFC 3339)").fill(fields.window ?? "");
      await spends.getByRole("button", { name: "Filter" }).click();
    };
    await filter({ user: alan.userId });
    await spends.getByText("Page 2").waitFor({ state: "detached" });
    await rows.filter({ hasText: alansFirst.id }).waitFor();
    expect(await rows.count()).toBe(2);
    await filter({ user: alan.userId, state: "SPEND_AUTHORIZATION_STATE_DECLINED" });
    await rows.filter({ hasText: alansFirst.id }).waitFor({ state: "detached" });
    await rows.filter({ hasText: declined.id }).waitFor();
    expect(await rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain("declined (limit exceeded)");
    await filter({ app: "app-salesforce" });
    await spends.getByText("Page 1").waitFor();
    expect(await rows.count()).toBe(25);
    // A row's window start, chosen, filters by it (typing that instant does the same).
    await filter({});
    await rows.filter({ hasText: alansFirst.id }).getByTitle(`Only the window of ${alansFirst.windowStart} to ${alansFirst.windowEnd}`).click();
    await expect.poll(() => rows.count()).toBe(2); // Alan's weekly window; Ada's are in a month's window
    expect(await rows.getByTestId("user-name").allTextContents()).toEqual(["Alan Turing", "Alan Turing"]);
    expect(await spends.getByLabel("Window start (RFC 3339)").inputValue()).toBe(alansFirst.windowStart);
    await filter({ window: alansFirst.windowStart, state: "SPEND_AUTHORIZATION_STATE_CAPTURED" });
    await rows.filter({ hasText: declined.id }).waitFor({ state: "detached" });
    await rows.filter({ hasText: alansFirst.id }).waitFor();
    expect(await rows.count()).toBe(1);
    // A window start that is no instant: the server's refusal, in words, under the form.
    await filter({ window: "last week" });
    await spends.getByRole("alert").waitFor();
    expect(await spends.getByRole("alert").textContent()).toContain("400");
    await context.close();

    const { context: phone, page: small } = await openConsole(browser, "phone", ts.url, grace, { path: "#/spends" });
    await small.getByTestId("authorization").first().getByTestId("user-name").waitFor();
    await expectNoHorizontalScroll(small);
    await screenshot(small, "first-hour-spends-phone");
    await phone.close();
  }, 120_000);

  it("a fund administrator sees users by name too: it may read them", async () => {
    const admin = await ts.userClient(["ROLE_FUND_ADMIN"], "Fund admin");
    const subject = await ts.userClient(["ROLE_USER"], "Named to a fund admin");
    await setLimit(admin.client, subject.userId, "app-zoom", money("40"), "PERIOD_KIND_MONTHLY");
    const spend = await authorize(subject.userId, "app-zoom", money("2"));
    const { context, page } = await openConsole(browser, "desktop", ts.url, admin, { path: "#/spends" });
    const row = page.getByTestId("authorization").filter({ hasText: spend.id });
    await row.getByTestId("user-name").getByText("Named to a fund admin").waitFor();
    expect(await row.textContent()).toContain(subject.userId);
    await row.getByRole("link").click();
    await page.getByRole("heading", { name: "Named to a fund admin · app-zoom" }).waitFor();
    expect(await page.getByTestId("controls-limit").textContent()).toBe("USD 40 a month");
    await context.close();
  }, 60_000);
});
