// Fund-event triggers in the console, in a real browser against a real server: a super admin creates
// an automation on fund events (the event types offered are the contract's, the thresholds asked
// only with the usage-threshold type), the server's refusals are shown next to the form, the saved
// trigger is what the API answers, and it is edited, also from a webhook trigger to fund events.
// The sandbox's usage-threshold automation is shown with a fund event as its steps' sample, and the
// execution a spend past its threshold starts; a notify step's secret is shown once and rotated.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { FundEventTypeValues } from "../../generated/enums.js";
import { THRESHOLD_AUTOMATION } from "../../scripts/sandbox/seed.js";
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

const THRESHOLD = "FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED";

async function triggerOf(id: string) {
  return unwrap(await ts.admin.GET("/api/v1/automations/{id}", { params: { path: { id } } })).automation.triggers;
}

/** The id in the page's address, `#/automations/<id>`, once the save has opened the automation. */
async function openedId(page: Page): Promise<string> {
  await page.waitForURL(/#\/automations\/aut_/);
  return new URL(page.url()).hash.replace("#/automations/", "");
}

/** Saves the form and waits for the refusal, matching `expected`, shown next to it. */
async function refused(page: Page, button: string, expected: RegExp): Promise<void> {
  await page.getByRole("button", { name: button }).click();
  await page.locator("form").getByRole("alert").filter({ hasText: expected }).waitFor();
}

describe("fund-event triggers in the console", () => {
  it("creates an automation on fund events, shows the server's refusals, saves what the API answers, and edits it", async () => {
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP, { path: "#/automations/new" });
    await page.getByLabel("Name").fill("Tell the manager at 80 %");
    await page.getByLabel("Fund events", { exact: true }).check();

    // The event types offered are the contract's, its zero value excepted; thresholds only with theirs.
    const types = page.getByRole("group", { name: "Event types" }).getByRole("checkbox");
    expect(await types.evaluateAll((boxes) => boxes.map((b) => (b as unknown as { value: string }).value))).toEqual(FundEventTypeValues.filter((t) => t !== "FUND_EVENT_TYPE_UNSPECIFIED"));
    expect(await page.getByLabel("Usage thresholds (%)").count()).toBe(0);
    await page.getByLabel("Usage threshold crossed", { exact: true }).check();
    await page.getByLabel("Usage thresholds (%)").waitFor();

    // The server's refusals, in words next to the form: a threshold out of range, a condition that does not compile.
    await page.getByLabel("Usage thresholds (%)").fill("80, 150");
    await refused(page, "Save", /Trigger 1 \(Fund events\), usage thresholds.*400\)$/);
    await page.getByLabel("Usage thresholds (%)").fill("80, 100");
    await page.getByLabel("Condition (CEL, optional)").fill('ctx.trigger.appId == "app-salesforce" &&');
    await refused(page, "Save", /Trigger 1 \(Fund events\), condition: .*\(CEL_INVALID, 400\)$/);
    await page.getByLabel("Usage thresholds (%)").fill("80 ninety");
    await refused(page, "Save", /"ninety" is not a whole percent/);
    await page.getByLabel("Usage thresholds (%)").fill("80, 100");
    await page.getByLabel("Condition (CEL, optional)").fill('ctx.trigger.appId == "app-salesforce"');
    await screenshot(page, "automation-new-fund-events-desktop");
    await page.getByRole("button", { name: "Save" }).click();

    // The automation's page shows the trigger, and the API has it as shown.
    const id = await openedId(page);
    const panel = page.getByRole("region", { name: "Fund events" });
    await panel.getByTestId("event-types").getByText("Usage threshold crossed").waitFor();
    expect(await panel.getByTestId("usage-thresholds").textContent()).toBe("80 %, 100 %");
    expect(await panel.getByTestId("condition").textContent()).toBe('ctx.trigger.appId == "app-salesforce"');
    expect(await page.getByRole("region", { name: "Listener" }).count()).toBe(0);
    expect(await triggerOf(id)).toEqual([{ webhook: null, fundEvents: { eventTypes: [THRESHOLD], usageThresholdPercents: [80, 100], conditionCel: 'ctx.trigger.appId == "app-salesforce"' } }]);
    await screenshot(page, "automation-fund-events-desktop");

    // Edit: the form holds the saved trigger; other types, no threshold, no condition.
    await page.getByRole("button", { name: "Change trigger" }).click();
    expect(await page.getByLabel("Usage thresholds (%)").inputValue()).toBe("80, 100");
    await page.getByLabel("Usage threshold crossed", { exact: true }).uncheck();
    expect(await page.getByLabel("Usage thresholds (%)").count()).toBe(0);
    await page.getByLabel("Limit suspended", { exact: true }).check();
    await page.getByLabel("Spend declined", { exact: true }).check();
    await page.getByLabel("Condition (CEL, optional)").fill("");
    await page.getByRole("button", { name: "Save trigger" }).click();
    await panel.getByTestId("event-types").getByText("Limit suspended").waitFor();
    expect(await panel.getByTestId("event-types").locator("li").allTextContents()).toEqual(["Spend declined", "Limit suspended"]);
    expect(await panel.getByTestId("usage-thresholds").count()).toBe(0);
    expect(await panel.getByTestId("condition").textContent()).toBe("None: every event of these types");
    expect(await triggerOf(id)).toEqual([{ webhook: null, fundEvents: { eventTypes: ["FUND_EVENT_TYPE_SPEND_DECLINED", "FUND_EVENT_TYPE_LIMIT_SUSPENDED"], usageThresholdPercents: [], conditionCel: "" } }]);

    // Saving no event type is the server's to refuse.
    await page.getByRole("button", { name: "Change trigger" }).click();
    await page.getByLabel("Limit suspended", { exact: true }).uncheck();
    await page.getByLabel("Spend declined", { exact: true }).uncheck();
    await refused(page, "Save trigger", /event types.*400\)$/);
    await page.getByRole("button", { name: "Cancel" }).click();

    // The list says what each automation runs on.
    await page.getByRole("link", { name: "← Automations" }).click();
    const row = page.getByRole("row").filter({ hasText: "Tell the manager at 80 %" });
    expect(await row.getByTestId("automation-trigger").textContent()).toBe("Fund events: Spend declined, Limit suspended");
    await context.close();

    const { context: phone, page: small } = await openConsole(browser, "phone", ts.url, BOOTSTRAP, { path: `#/automations/${id}` });
    await small.getByRole("region", { name: "Fund events" }).waitFor();
    await small.getByRole("button", { name: "Change trigger" }).click();
    await expectNoHorizontalScroll(small);
    await screenshot(small, "automation-fund-events-phone");
    await phone.close();
  }, 120_000);

  it("changes a webhook trigger to fund events, which removes the listener", async () => {
    const made = unwrap(await ts.admin.POST("/api/v1/automations", { body: { automation: { displayName: "From webhook to fund events", triggers: [{ webhook: { hmac: {} } }] } } }));
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP, { path: `#/automations/${made.automation.id}` });
    await page.getByRole("region", { name: "Listener" }).waitFor();
    await page.getByRole("button", { name: "Change trigger" }).click();
    await page.getByLabel("Fund events", { exact: true }).check();
    await page.getByText("Saving removes the webhook listener").waitFor();
    await page.getByLabel("Limit changed", { exact: true }).check();
    await page.getByRole("button", { name: "Save trigger" }).click();
    await page.getByRole("region", { name: "Fund events" }).getByText("Limit changed").waitFor();
    expect(await page.getByRole("region", { name: "Listener" }).count()).toBe(0);
    expect(await page.getByRole("button", { name: "Rotate secret" }).count()).toBe(0);
    expect(await triggerOf(made.automation.id!)).toEqual([{ webhook: null, fundEvents: { eventTypes: ["FUND_EVENT_TYPE_LIMIT_CHANGED"], usageThresholdPercents: [], conditionCel: "" } }]);
    await context.close();
  }, 60_000);

  it("shows the sandbox's usage-threshold automation, its steps checked against a sample fund event, and its executions", async () => {
    const made = unwrap(await ts.admin.POST("/api/v1/automations", { body: { automation: THRESHOLD_AUTOMATION } }));
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP);
    const row = page.getByRole("row").filter({ hasText: THRESHOLD_AUTOMATION.displayName });
    expect(await row.getByTestId("automation-trigger").textContent()).toBe("Fund events: Usage threshold crossed (80 %)");
    await row.getByRole("link").click();
    const panel = page.getByRole("region", { name: "Fund events" });
    expect(await panel.getByTestId("usage-thresholds").textContent()).toBe("80 %");
    expect(await panel.getByTestId("condition").textContent()).toBe('ctx.trigger.appId == "app-salesforce"');
    expect(await page.getByTestId("automation-state").textContent()).toBe("Published, trigger on");
    expect(await page.getByLabel("Sample payload (ctx.trigger)").inputValue()).toContain(`"type": "${THRESHOLD}"`);
    await page.getByText("The steps pass the checks of a save.").waitFor();
    const usage = page.locator(`[data-path="automationSteps[0].evaluateExpressions.expressions[1].expression"]`);
    await usage.getByText(/"remaining":\{[^}]*"units":"15"/).waitFor();
    expect(made.automation.id).toBe(new URL(page.url()).hash.replace("#/automations/", ""));

    // A spend that takes a subject's Salesforce month to 85 % of its limit: the execution it started is listed.
    await page.getByText("No execution yet.").waitFor();
    const subject = await ts.userClient(["ROLE_USER"], "Near the limit");
    const usd = (units: string) => ({ currencyCode: "USD", units, nanos: 0 });
    unwrap(await ts.admin.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", { params: { path: { user_id: subject.userId, app_id: "app-salesforce" } }, body: { limit: { amount: { money: usd("100") } }, period: "PERIOD_KIND_MONTHLY" } }));
    const body = { userId: subject.userId, appId: "app-salesforce", amount: usd("85") };
    unwrap(await ts.admin.POST("/api/v1/funds/spend-authorizations", { params: { header: { "Idempotency-Key": crypto.randomUUID() } }, body }));
    const execution = page.getByTestId("fund-execution").first();
    await execution.getByTestId("execution-state").getByText("done").waitFor();
    expect(await execution.getByTestId("event-type").textContent()).toBe("Usage threshold crossed");
    // The subject of the event, by name (a user made after sign-in: read by id).
    await execution.getByTestId("user-name").getByText("Near the limit").waitFor();
    expect(await execution.getByTestId("step-result").first().textContent()).toContain(`"userId": "${subject.userId}"`);
    await screenshot(page, "automation-threshold-desktop");
    await context.close();
  }, 60_000);

  it("shows a notify step's signing secret once, and rotates it", async () => {
    const made = unwrap(await ts.admin.POST("/api/v1/automations", { body: { automation: { displayName: "Notify on declines", triggers: [{ fundEvents: { eventTypes: ["FUND_EVENT_TYPE_SPEND_DECLINED"] } }] } } }));
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP, { path: `#/automations/${made.automation.id}` });
    expect(await page.getByRole("button", { name: "Rotate notification secret" }).count()).toBe(0);
    await page.getByLabel("New step").selectOption("notify");
    await page.getByRole("button", { name: "Add step" }).click();
    const step = page.locator('li[aria-label="Step 1"]');
    await step.getByLabel("URL (https)").fill("https://hooks.example.com/limits");
    await step.getByLabel("Body (CEL, any JSON value)").fill('{"userId": ctx.trigger.userId, "cause": ctx.trigger.authorization.decision.cause}');
    await step.getByText(/"cause":"SPEND_DECLINE_CAUSE_UNSPECIFIED"/).waitFor();
    await page.getByRole("button", { name: "Save steps" }).click();
    const secret = page.getByTestId("notification-secret");
    await secret.waitFor();
    const first = (await secret.textContent()) ?? "";
    expect(first).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    await page.getByRole("button", { name: "Rotate notification secret" }).click();
    await page.getByTestId("notification-secret").filter({ hasNotText: first }).waitFor();
    expect(await secret.textContent()).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    await screenshot(page, "automation-notify-desktop");
    await context.close();
  }, 60_000);
});
