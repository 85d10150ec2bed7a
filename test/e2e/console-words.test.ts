// The console offers, confirms and speaks plainly, in a real browser against a real server: a user
// field suggests users by name; the Users page pages through users; every placeholder reads as a
// hint; saves confirm in words; the audit trail names operations in words; a CEL error names the
// step and expression as the console shows them; the example bodies name a user that exists.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { unwrap } from "../../src/client/index.js";
import { serverAndBrowserForFile, screenshot, type TestBrowser } from "../support/browser.js";
import { BOOTSTRAP, type TestServer } from "../support/server.js";
import { expectNoHorizontalScroll, openConsole } from "./console-helpers.js";

let ts: TestServer;
let browser: TestBrowser;

serverAndBrowserForFile((server, opened) => {
  ts = server;
  browser = opened;
});

/** A placeholder is a hint: an example ("e.g. 250.00") or words ("user name or id"), never what looks like data. */
const HINT = /^(e\.g\. \S.*|[a-z]+( [a-z]+)*)$/;

/** Every placeholder of the page as it is now. */
async function placeholders(page: Page): Promise<string[]> {
  return page.locator("[placeholder]").evaluateAll((inputs) => inputs.map((i) => (i as unknown as { placeholder: string }).placeholder));
}

/** Creates an automation through the API, on an HMAC webhook, with no steps. */
async function automation(name: string): Promise<string> {
  const body = { automation: { displayName: name, isDraft: true, enabled: true, triggers: [{ webhook: { hmac: {}, allowedSourceCidrs: [] } }], automationSteps: [] } };
  return unwrap(await ts.admin.POST("/api/v1/automations", { body })).automation.id ?? "";
}

describe("a console that offers, confirms and speaks plainly", () => {
  it("a fund admin opens a row by choosing a user by name, and each save confirms in words; the audit trail says what was done", async () => {
    const admin = await ts.userClient(["ROLE_FUND_ADMIN"], "Fund admin");
    const ada = await ts.userClient(["ROLE_USER"], "Ada Lovelace");
    const { context, page } = await openConsole(browser, "desktop", ts.url, admin, { path: "#/limits/open" });

    // The user id input suggests users by name: typing part of it lists her; Enter puts in her id.
    const userInput = page.getByRole("combobox", { name: "User id" });
    await userInput.pressSequentially("ada lov");
    await page.getByRole("listbox", { name: "Users" }).getByRole("option", { name: /^Ada Lovelace/ }).waitFor();
    await screenshot(page, "words-user-suggestions-desktop");
    await userInput.press("Enter");
    expect(await userInput.inputValue()).toBe(ada.userId);
    expect(await page.getByRole("listbox").count()).toBe(0);
    await page.getByLabel("App id").fill("app-salesforce");
    await page.getByRole("button", { name: "Open" }).click();
    await page.getByRole("heading", { name: "Ada Lovelace · app-salesforce" }).waitFor();

    const base = page.getByRole("region", { name: "Base limit" });
    await base.getByLabel("Amount (USD)").fill("250.00");
    await base.getByRole("button", { name: "Set limit" }).click();
    expect(await base.getByRole("status").textContent()).toBe("Limit set for Ada Lovelace on app-salesforce: USD 250 a month.");

    const suspension = page.getByRole("region", { name: "Suspension" });
    await suspension.getByLabel("Reason").fill("Card reported lost");
    await suspension.getByRole("button", { name: "Suspend" }).click();
    await suspension.getByRole("status").getByText("Suspended Ada Lovelace on app-salesforce.").waitFor();
    await suspension.getByRole("button", { name: "Unsuspend" }).click();
    await suspension.getByRole("status").getByText("Unsuspended Ada Lovelace on app-salesforce.").waitFor();

    // The row's history names the operations in words, the RPC name as the title.
    const history = page.getByRole("region", { name: "History" });
    await history.getByTestId("audit-operation").filter({ hasText: "Unsuspended" }).waitFor();
    expect(await history.getByTestId("audit-operation").allTextContents()).toEqual(["Unsuspended", "Suspended", "Limit set"]);
    expect(await history.getByTestId("audit-operation").last().getAttribute("title")).toBe("svc.api.funds.v1.SubjectAppLimitService.SetLimit");
    await screenshot(page, "words-limit-row-desktop");

    // Another form's save: a cap.
    await page.getByRole("link", { name: "Caps and policy" }).click();
    const caps = page.getByRole("region", { name: "App caps" });
    await caps.getByLabel("App id").fill("app-zoom");
    await caps.getByLabel("Amount (USD)").fill("1000");
    await caps.getByRole("button", { name: "Set cap" }).click();
    await caps.getByRole("status").getByText("Cap set on app-zoom: USD 1000 a month.").waitFor();

    await page.getByRole("link", { name: "Audit trail" }).click();
    await page.getByTestId("audit-operation").filter({ hasText: "App cap set" }).waitFor();
    const operations = await page.getByTestId("audit-operation").allTextContents();
    expect(operations).toEqual(expect.arrayContaining(["App cap set", "Limit set", "Suspended"]));
    expect(operations.filter((o) => o.includes("Service."))).toEqual([]);

    // The audit trail's user filter suggests the same way; a click chooses.
    const filter = page.getByRole("combobox", { name: "User id", exact: true });
    await filter.pressSequentially("Lovelace");
    await page.getByRole("option", { name: /^Ada Lovelace/ }).click();
    expect(await filter.inputValue()).toBe(ada.userId);
    await page.getByRole("button", { name: "Filter" }).click();
    await page.getByTestId("audit-event").nth(2).waitFor();
    expect(await page.getByTestId("audit-operation").allTextContents()).toEqual(["Unsuspended", "Suspended", "Limit set"]);
    await context.close();
  }, 90_000);

  it("the Users page lists users 20 a page, pages on, and opens a user's limit rows", async () => {
    const admin = await ts.userClient(["ROLE_FUND_ADMIN"], "Users reader");
    for (let i = 0; i < 21; i++) await ts.userClient(["ROLE_USER"], `Listed user ${i + 1}`);
    const { context, page } = await openConsole(browser, "desktop", ts.url, admin);
    await page.getByRole("link", { name: "Users" }).click();
    await page.getByRole("heading", { name: "Users" }).waitFor();
    await page.getByTestId("user").first().waitFor();
    expect(await page.getByTestId("user").count()).toBe(20);
    const first = await page.getByTestId("user").allTextContents();
    await page.getByRole("button", { name: "Next page" }).click();
    await page.getByText("Page 2").waitFor();
    const second = await page.getByTestId("user").allTextContents();
    expect(second.length).toBeGreaterThan(0);
    expect(second.filter((row) => first.includes(row))).toEqual([]);
    await screenshot(page, "words-users-desktop");

    // A name opens that user's limit rows: the search filtered by their id.
    const row = page.getByTestId("user").first();
    const id = (await row.locator("code").textContent()) ?? "";
    await row.getByRole("link").click();
    await page.getByRole("heading", { name: "Fund limits" }).waitFor();
    expect(await page.getByLabel("User ids").inputValue()).toBe(id);
    await context.close();

    // On a phone the page fits the screen's width.
    const phone = await openConsole(browser, "phone", ts.url, admin, { path: "#/users" });
    await phone.page.getByTestId("user").first().waitFor();
    await expectNoHorizontalScroll(phone.page);
    await screenshot(phone.page, "words-users-phone");
    await phone.context.close();
  }, 90_000);

  it("every placeholder on every page reads as a hint", async () => {
    const id = await automation("Placeholders");
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP);
    const seen: string[] = [];
    const links = await page.getByRole("navigation", { name: "Main" }).getByRole("link").allTextContents();
    expect(links.length).toBeGreaterThan(5);
    for (const name of links) {
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true }).click();
      await page.getByRole("heading", { level: 1 }).first().waitFor();
      seen.push(...(await placeholders(page)));
    }
    const row = (await ts.userClient(["ROLE_USER"], "Placeholder subject")).userId;
    for (const path of ["limits/open", `limits/${row}/app-salesforce`, "automations/new"]) {
      await page.goto(`${ts.url}/console/#/${path}`);
      await page.getByRole("heading", { level: 1 }).first().waitFor();
      seen.push(...(await placeholders(page)));
    }
    await page.getByLabel("JWT (your JWKS)").check();
    seen.push(...(await placeholders(page)));
    await page.getByLabel("Standard Webhooks (Svix and others)").check();
    seen.push(...(await placeholders(page)));
    await page.getByLabel("Fund events", { exact: true }).check();
    await page.getByLabel("Usage threshold crossed", { exact: true }).check();
    seen.push(...(await placeholders(page)));

    // An automation with a step of each kind shows every CEL input's placeholder.
    await page.goto(`${ts.url}/console/#/automations/${id}`);
    for (const kind of ["Evaluate expressions", "Suspend an app limit", "Set an app limit extension", "Send a notification"]) {
      await page.getByLabel("New step").selectOption({ label: kind });
      await page.getByRole("button", { name: "Add step" }).click();
    }
    await page.locator('li[aria-label="Step 4"]').waitFor();
    seen.push(...(await placeholders(page)));

    expect(seen.length).toBeGreaterThan(15);
    expect(seen.filter((p) => !HINT.test(p))).toEqual([]);
    await context.close();
  }, 120_000);

  it("a CEL error names the step and expression as the console shows them, and the examples name a user that exists", async () => {
    await ts.userClient(["ROLE_USER"], "Example holder");
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP, { path: "#/automations/new" });
    // Creating it confirms on the page that follows.
    await page.getByLabel("Name").fill("Words for CEL");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").getByText("Automation created: Words for CEL, a draft.").waitFor();

    // The example request and the sample payload name a user of the tenant.
    const example = (await page.getByTestId("example-request").textContent()) ?? "";
    const sent = JSON.parse(/--body '([^']+)'/.exec(example)?.[1] ?? "{}") as { userId?: string };
    const sample = JSON.parse(await page.getByLabel("Sample payload (ctx.trigger)").inputValue()) as { userId?: string };
    expect(sample.userId).toBe(sent.userId);
    const { response } = await ts.admin.GET("/api/v1/users/{user_id}", { params: { path: { user_id: sent.userId ?? "" } } });
    expect(response.status).toBe(200);

    await page.getByRole("button", { name: "Add step" }).click();
    await page.locator('li[aria-label="Step 1"]').getByLabel("Expression (CEL)").fill("ctx.trigger.(");
    // Checked as typed, the problem under the expression names it the same way.
    const underField = page.locator('[data-path="automationSteps[0].evaluateExpressions.expressions[0].expression"]');
    await underField.getByText(/^Step 1 \(Evaluate expressions\), expression 1: /).waitFor();
    await page.getByRole("button", { name: "Save steps" }).click();
    const refusal = page.getByRole("region", { name: "Steps" }).getByRole("alert").filter({ hasText: "CEL_INVALID" });
    await refusal.waitFor();
    const text = (await refusal.textContent()) ?? "";
    expect(text).toMatch(/^Step 1 \(Evaluate expressions\), expression 1: .*\(CEL_INVALID, 400\)$/);
    expect(text).not.toContain("automationSteps");
    await screenshot(page, "words-cel-error-desktop");

    await page.locator('li[aria-label="Step 1"]').getByLabel("Expression (CEL)").fill("ctx.trigger.userId");
    await page.getByRole("button", { name: "Save steps" }).click();
    await page.getByRole("region", { name: "Steps" }).getByRole("status").getByText("Steps saved: one step.").waitFor();
    await context.close();
  }, 90_000);

  it("a user field finds a user beyond the first 100 the console read, by typing part of the name", async () => {
    const admin = await ts.userClient(["ROLE_FUND_ADMIN"], "Far reader");
    // As many users as there are now, plus 101: some user of this batch sorts after the first 100 ids.
    const before = await allUserIds();
    const batch = new Map<string, string>();
    for (let i = 0; i < before.length + 101; i++) {
      const displayName = `Bulk Person ${String(i).padStart(3, "0")}`;
      const { user } = unwrap(await ts.admin.POST("/api/v1/users", { body: { displayName, email: `bulk${i}@example.com`, roles: ["ROLE_USER"] } }));
      batch.set(user.id!, displayName);
    }
    const far = (await allUserIds()).slice(100).find((id) => batch.has(id))!;
    const name = batch.get(far)!;

    const { context, page } = await openConsole(browser, "desktop", ts.url, admin, { path: "#/limits/open" });
    const userInput = page.getByRole("combobox", { name: "User id" });
    await userInput.pressSequentially(name.slice("Bulk ".length).toLowerCase());
    await page.getByRole("listbox", { name: "Users" }).getByRole("option", { name: new RegExp(`^${name}`) }).waitFor();
    await userInput.press("Enter");
    expect(await userInput.inputValue()).toBe(far);
    await context.close();
  }, 90_000);
});

/** Every user's id, in the API's order (ascending id). */
async function allUserIds(): Promise<string[]> {
  const ids: string[] = [];
  let page_token = "";
  do {
    const page = unwrap(await ts.admin.GET("/api/v1/users", { params: { query: { page_size: 100, page_token } } }));
    ids.push(...page.list.map(({ user }) => user.id!));
    page_token = page.nextPageToken;
  } while (page_token);
  return ids;
}
