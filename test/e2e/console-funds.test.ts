// Fund limits in the console, in a real browser against a real server: a fund administrator finds
// a subject's row, suspends it with a reason and sees the effective limit turn to deny (and back on
// unsuspend), sets and clears an extension; caps and the policy (its default and its time zone);
// reads a row's window usage (bar and figures) and its spend authorizations, releases a hold and
// reverses a spend after confirming; a ROLE_USER sees only their own limits and usage, and sets a
// limit; an app's backend (ROLE_APP_SERVICE) has no page. Screenshots at 1280 px and at phone width.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap, type ApiClient } from "../../src/client/index.js";
import { launchBrowser, screenshot, type TestBrowser } from "../support/browser.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { expectNoHorizontalScroll, openConsole, signIn } from "./console-helpers.js";

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
const money = (units: string, nanos = 0) => ({ currencyCode: "USD", units, nanos });

/** Authorizes through the API, a second later each time on the server's clock: newest first is then certain. */
async function authorize(client: ApiClient, userId: string, appId: string, amount: ReturnType<typeof money>, capture = false) {
  ts.clock.advance(1000);
  const body = { userId, appId, amount, ...(capture ? { capture } : {}) };
  return unwrap(await client.POST("/api/v1/funds/spend-authorizations", { params: { header: { "Idempotency-Key": crypto.randomUUID() } }, body })).authorization;
}

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
    expect(await page.getByTestId("controls-limit").textContent()).toBe("USD 250 a month");
    const suspension = page.getByRole("region", { name: "Suspension" });
    await suspension.getByLabel("Reason").fill("Card reported lost");
    await suspension.getByRole("button", { name: "Suspend" }).click();
    await page.getByTestId("effective-decision").getByText("deny").waitFor();
    expect(await page.getByTestId("controls-suspension").textContent()).toContain("Card reported lost");
    expect(await page.getByRole("list", { name: "Resolution trace" }).textContent()).toContain("SCOPE_SUBJECT_APP: suspended");
    await screenshot(page, "limit-suspended-desktop");

    await suspension.getByRole("button", { name: "Unsuspend" }).click();
    await page.getByTestId("effective-decision").getByText("limit").waitFor();
    expect(await page.getByTestId("controls-limit").textContent()).toBe("USD 250 a month");

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

    // A limit with a cap on one authorization and a count per window: shown with the row's controls
    // and in the effective limit, the window's count used and left with its usage. A count that is
    // not a whole number is said in words, and nothing is sent.
    await base.getByLabel("Amount (USD)").fill("300");
    await base.getByLabel("Cap per authorization (USD)").fill("40.50");
    await base.getByLabel("Authorizations per window").fill("2.5");
    await base.getByRole("button", { name: "Set limit" }).click();
    await base.getByRole("alert").getByText("Enter a whole number of authorizations").waitFor();
    await base.getByLabel("Authorizations per window").fill("2");
    await base.getByRole("button", { name: "Set limit" }).click();
    await page.getByTestId("controls-per-authorization").getByText("USD 40.50").waitFor();
    expect(await page.getByTestId("controls-max-authorizations").textContent()).toBe("2");
    const effective = page.getByRole("region", { name: "Effective limit" });
    expect(await effective.textContent()).toContain("at most USD 40.50 per authorization · at most 2 authorizations per window");
    expect(await effective.getByTestId("usage-authorizations").textContent()).toBe("0 of 2");
    expect(await base.getByLabel("Cap per authorization (USD)").inputValue()).toBe("40.50");
    expect(await base.getByLabel("Authorizations per window").inputValue()).toBe("2");

    // Two authorizations use the window's count; a third is declined, in words. (The page is read
    // anew after each: the console keeps its sign-in in memory only.)
    await authorize(ts.admin, subject.userId, "app-salesforce", money("10"));
    await page.reload();
    await signIn(page, admin);
    await effective.getByTestId("usage-authorizations").getByText("1 of 2").waitFor();
    expect(await effective.getByTestId("usage-authorizations-remaining").textContent()).toBe("1");
    await authorize(ts.admin, subject.userId, "app-salesforce", money("10"), true);
    const third = await authorize(ts.admin, subject.userId, "app-salesforce", money("10"));
    expect(third.decision.cause).toBe("SPEND_DECLINE_CAUSE_MAX_AUTHORIZATIONS_REACHED");
    await page.reload();
    await signIn(page, admin);
    await effective.getByTestId("usage-authorizations").getByText("2 of 2").waitFor();
    expect(await effective.getByTestId("usage-authorizations-remaining").textContent()).toBe("0");
    const declinedRow = page.getByTestId("authorization").filter({ hasText: third.id });
    await declinedRow.waitFor();
    expect(await declinedRow.textContent()).toContain("declined (max authorizations reached)");

    // App caps and the fund policy.
    await page.getByRole("link", { name: "Caps and policy" }).click();
    const caps = page.getByRole("region", { name: "App caps" });
    await caps.getByLabel("App id").fill("app-github");
    await caps.getByLabel("Amount (USD)").fill("1000");
    await caps.getByLabel("Authorizations per window").fill("5");
    await caps.getByRole("button", { name: "Set cap" }).click();
    await caps.getByRole("heading", { name: "app-github" }).waitFor();
    expect(await caps.getByRole("listitem").filter({ hasText: "app-github" }).getByTestId("controls-max-authorizations").textContent()).toBe("5");
    const policy = page.getByRole("region", { name: "Fund policy" });
    await policy.getByLabel("Limit").selectOption("unlimited");
    await policy.getByLabel("Authorizations per window").fill("7");
    await policy.getByRole("button", { name: "Set default" }).click();
    await policy.getByTestId("controls-limit").getByText("unlimited").waitFor();
    expect(await policy.getByTestId("controls-max-authorizations").textContent()).toBe("7");
    // Left empty, the default states no count (the tests after this one spend under the default).
    await policy.getByLabel("Authorizations per window").fill("");
    await policy.getByRole("button", { name: "Set default" }).click();
    await policy.getByTestId("controls-max-authorizations").getByText("none").waitFor();
    expect(unwrap(await ts.admin.GET("/api/v1/funds/app-caps/{app_id}", { params: { path: { app_id: "app-github" } } })).appCap.controls).toMatchObject({ maxAuthorizations: 5, perAuthorization: null });
    expect(await policy.getByTestId("policy-time-zone").textContent()).toBe("UTC");
    await policy.getByLabel("Time zone").fill("Mars/Olympus_Mons");
    await policy.getByRole("button", { name: "Set time zone" }).click();
    await policy.getByRole("alert").getByText("INVALID_TIME_ZONE").waitFor();
    await policy.getByLabel("Time zone").fill("Europe/Paris");
    await policy.getByRole("button", { name: "Set time zone" }).click();
    await policy.getByTestId("policy-time-zone").getByText("Europe/Paris").waitFor();
    expect(unwrap(await ts.admin.GET("/api/v1/funds/policy")).fundPolicy).toMatchObject({ timeZone: "Europe/Paris", defaultControls: { limit: { unlimited: {} }, maxAuthorizations: null } });
    await screenshot(page, "caps-policy-desktop");
    await context.close();

    const { context: phone, page: small } = await openConsole(browser, "phone", ts.url, admin, { path: `#/limits/${subject.userId}/app-salesforce` });
    await small.getByTestId("effective-decision").waitFor();
    await expectNoHorizontalScroll(small);
    await screenshot(small, "limit-row-phone");
    await phone.close();
  }, 120_000);

  it("a fund administrator reads a row's usage and authorizations, releases a hold and reverses a spend, each after confirming", async () => {
    const admin = await ts.userClient(["ROLE_FUND_ADMIN"], "Spend admin");
    const subject = await ts.userClient(["ROLE_USER"], "Spender");
    const app = "app-salesforce";
    unwrap(await ts.admin.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", { params: { path: { user_id: subject.userId, app_id: app } }, body: { limit: usd("100"), period: "PERIOD_KIND_MONTHLY" } }));
    // 12 authorizations (two pages of 10): 54 spent, 12.50 held, one declined.
    await authorize(ts.admin, subject.userId, app, money("30"), true);
    const refunded = await authorize(ts.admin, subject.userId, app, money("20"), true);
    for (let i = 0; i < 8; i++) await authorize(ts.admin, subject.userId, app, money("0", 500_000_000), true);
    const hold = await authorize(ts.admin, subject.userId, app, money("12", 500_000_000));
    const declined = await authorize(ts.admin, subject.userId, app, money("500"));
    expect([hold.state, declined.state]).toEqual(["SPEND_AUTHORIZATION_STATE_PENDING", "SPEND_AUTHORIZATION_STATE_DECLINED"]);

    const { context, page } = await openConsole(browser, "desktop", ts.url, admin, { path: `#/limits/${subject.userId}/${app}` });
    const usage = page.getByRole("region", { name: "Usage" });
    await usage.getByTestId("usage-spent").getByText("USD 54").waitFor();
    expect(await usage.getByTestId("usage-held").textContent()).toBe("USD 12.50");
    expect(await usage.getByTestId("usage-remaining").textContent()).toBe("USD 33.50");
    expect(await usage.getByTestId("usage-limit").textContent()).toBe("USD 100");
    // The bar's parts are the exact shares of the limit.
    expect(await usage.getByTestId("usage-bar-spent").getAttribute("style")).toBe("width: 54%;");
    expect(await usage.getByTestId("usage-bar-held").getAttribute("style")).toBe("width: 12.5%;");
    expect(await usage.getByRole("img").getAttribute("aria-label")).toBe("Spent USD 54, held USD 12.50, remaining USD 33.50 of USD 100");

    // Newest first, ten to a page.
    const list = page.getByRole("region", { name: "Authorizations" });
    const rows = list.getByTestId("authorization");
    await rows.first().waitFor();
    expect(await rows.count()).toBe(10);
    expect(await rows.first().textContent()).toContain(declined.id);
    expect(await rows.first().getByTestId("authorization-state").textContent()).toBe("declined");
    expect(await rows.first().textContent()).toContain("declined (limit exceeded)");
    await list.getByRole("button", { name: "Next page" }).click();
    await list.getByText("Page 2").waitFor();
    expect(await rows.count()).toBe(2);
    expect(await rows.last().textContent()).toContain("USD 30");
    await list.getByRole("button", { name: "Previous page" }).click();
    await list.getByText(hold.id).waitFor();
    await screenshot(page, "spends-desktop");

    // Release: nothing is sent until confirmed.
    const holdRow = rows.filter({ hasText: hold.id });
    await holdRow.getByRole("button", { name: "Release" }).click();
    const confirmRelease = page.getByRole("alertdialog", { name: "Release this hold?" });
    expect(await confirmRelease.textContent()).toContain("USD 12.50");
    await screenshot(page, "spend-release-confirm-desktop");
    await confirmRelease.getByRole("button", { name: "Release the hold" }).click();
    await list.getByRole("status").getByText(`Released the hold of USD 12.50 (${hold.id}).`).waitFor();
    await holdRow.getByTestId("authorization-state").getByText("released").waitFor();
    await usage.getByTestId("usage-held").getByText("USD 0").waitFor();
    expect(await usage.getByTestId("usage-remaining").textContent()).toBe("USD 46");
    expect(await holdRow.getByRole("button", { name: "Release" }).count()).toBe(0);

    // Reverse: cancelled first (nothing changes), then 7.25 of 20 confirmed.
    const refundRow = rows.filter({ hasText: refunded.id });
    const reverseLabel = "Reverse this spend?";
    await list.getByRole("button", { name: "Next page" }).click();
    await refundRow.getByRole("button", { name: "Reverse" }).waitFor();
    await refundRow.getByRole("button", { name: "Reverse" }).click();
    await page.getByRole("alertdialog", { name: reverseLabel }).getByRole("button", { name: "Cancel" }).click();
    expect(await page.getByRole("alertdialog").count()).toBe(0);
    const untouched = unwrap(await ts.admin.GET("/api/v1/funds/spend-authorizations/{authorization_id}", { params: { path: { authorization_id: refunded.id } } })).authorization;
    expect(untouched.reversedAmount).toEqual(money("0"));

    await refundRow.getByRole("button", { name: "Reverse" }).click();
    const confirmReverse = page.getByRole("alertdialog", { name: reverseLabel });
    const amount = confirmReverse.getByLabel("Amount to reverse (USD)");
    expect(await amount.inputValue()).toBe("20");
    // A bad amount is said in words, and nothing is sent.
    await amount.fill("20.0000000001");
    await confirmReverse.getByRole("button", { name: "Reverse" }).click();
    await confirmReverse.getByRole("alert").getByText("Enter an amount").waitFor();
    await amount.fill("7.25");
    await confirmReverse.getByRole("button", { name: "Reverse" }).click();
    await list.getByRole("status").getByText(`Reversed USD 7.25 of ${refunded.id}.`).waitFor();
    await usage.getByTestId("usage-spent").getByText("USD 46.75").waitFor();
    expect(await usage.getByTestId("usage-remaining").textContent()).toBe("USD 53.25");
    // 12.75 is left to reverse: the row still offers it, and the server refuses more than that, said in words.
    await refundRow.getByRole("button", { name: "Reverse" }).click();
    expect(await page.getByRole("alertdialog", { name: reverseLabel }).getByLabel("Amount to reverse (USD)").inputValue()).toBe("12.75");
    await page.getByRole("alertdialog", { name: reverseLabel }).getByLabel("Amount to reverse (USD)").fill("13");
    await page.getByRole("alertdialog", { name: reverseLabel }).getByRole("button", { name: "Reverse" }).click();
    await page.getByRole("alertdialog", { name: reverseLabel }).getByRole("alert").getByText("AMOUNT_EXCEEDS_CAPTURED").waitFor();
    // Corrected, it is another request (a new Idempotency-Key): all the rest is reversed, and nothing is left to offer.
    await page.getByRole("alertdialog", { name: reverseLabel }).getByLabel("Amount to reverse (USD)").fill("12.75");
    await page.getByRole("alertdialog", { name: reverseLabel }).getByRole("button", { name: "Reverse" }).click();
    await list.getByRole("status").getByText(`Reversed USD 12.75 of ${refunded.id}.`).waitFor();
    await usage.getByTestId("usage-spent").getByText("USD 34").waitFor();
    // The list is read again after the status is said: the button goes with that reading.
    await refundRow.getByRole("button", { name: "Reverse" }).waitFor({ state: "detached" });

    const after = await Promise.all(
      [hold.id, refunded.id].map(async (id) => unwrap(await ts.admin.GET("/api/v1/funds/spend-authorizations/{authorization_id}", { params: { path: { authorization_id: id } } })).authorization),
    );
    expect(after.map((a) => [a.state, a.reversedAmount])).toEqual([
      ["SPEND_AUTHORIZATION_STATE_RELEASED", money("0")],
      ["SPEND_AUTHORIZATION_STATE_CAPTURED", money("20")],
    ]);

    // The state filter.
    await list.getByLabel("State").selectOption("SPEND_AUTHORIZATION_STATE_DECLINED");
    await list.getByText("Page 2").waitFor({ state: "detached" });
    await rows.filter({ hasText: declined.id }).waitFor();
    expect(await rows.count()).toBe(1);
    await context.close();

    const { context: phone, page: small } = await openConsole(browser, "phone", ts.url, admin, { path: `#/limits/${subject.userId}/${app}` });
    await small.getByTestId("usage-spent").getByText("USD 34").waitFor();
    await small.getByTestId("authorization").first().waitFor();
    await expectNoHorizontalScroll(small);
    await screenshot(small, "spends-phone");
    await phone.close();
  }, 120_000);

  it("a ROLE_USER sees only their own limits and sets one", async () => {
    const user = await ts.userClient(["ROLE_USER"], "Self-service user");
    const { context, page } = await openConsole(browser, "phone", ts.url, user, { path: "#/limits" });
    await page.getByRole("heading", { name: "My limits" }).waitFor();
    // Their own limits, and the audit trail of their own rows.
    expect(await page.getByRole("navigation", { name: "Main" }).textContent()).toBe("My limitsAudit trail");
    await page.getByText("You have no limits of your own yet.").waitFor();

    await page.getByLabel("App id").fill("app-github");
    await page.getByLabel("Amount (USD)").fill("75.5");
    await page.getByRole("button", { name: "Set my limit" }).click();
    await page.getByRole("heading", { name: "app-github" }).waitFor();
    await page.getByTestId("effective-decision").getByText("limit").waitFor();
    expect(await page.getByTestId("controls-limit").textContent()).toBe("USD 75.50 a month");
    const mine = unwrap(await user.client.GET("/api/v1/funds/my/app-limits/{app_id}", { params: { path: { app_id: "app-github" } } }));
    expect(mine.limit.controls?.limit).toEqual({ amount: { money: { currencyCode: "USD", units: "75", nanos: 500_000_000 } }, blocked: null, unlimited: null });
    await page.getByTestId("usage-remaining").getByText("USD 75.50").waitFor();

    // Their own usage: after a spend of 20 by the app, the effective limit shows it.
    await authorize(ts.admin, user.userId, "app-github", money("20"), true);
    await page.getByRole("button", { name: "Effective limit" }).click();
    await page.getByTestId("usage-spent").getByText("USD 20").waitFor();
    expect(await page.getByTestId("usage-remaining").textContent()).toBe("USD 55.50");
    await expectNoHorizontalScroll(page);
    await screenshot(page, "my-limits-phone");
    await context.close();
  }, 60_000);

  it("an app's backend (ROLE_APP_SERVICE) signs in to no page: it has no fund of its own and administers nothing", async () => {
    const service = await ts.userClient(["ROLE_APP_SERVICE"], "Billing backend", { appIds: ["app-salesforce"] });
    const { context, page } = await openConsole(browser, "phone", ts.url, service, { path: "#/my" });
    await page.getByRole("heading", { name: "Nothing to manage here" }).waitFor();
    expect(await page.getByRole("navigation", { name: "Main" }).textContent()).toBe("");
    await expectNoHorizontalScroll(page);
    await context.close();
  }, 60_000);
});
