// The console in a real browser, against a real server: a super admin creates an HMAC automation,
// copies its URL and secret, writes steps checked as they are typed, publishes, and sends a signed
// event with the sender script (and with the console's curl example); the delivery log shows the
// execution with its step outputs. Screenshots of each page at 1280 px and at phone width.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../src/client/index.js";
import { launchBrowser, clipboard, screenshot, type TestBrowser } from "../support/browser.js";
import { runSendWebhook, runToEnd } from "../support/process.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../support/server.js";
import { expectNoHorizontalScroll, openConsole } from "./console-helpers.js";

let ts: TestServer;
let browser: TestBrowser;
let subject: { userId: string };

beforeAll(async () => {
  ts = await startTestServer();
  ts.clock.set(Date.now()); // the sender signs with the real time
  browser = await launchBrowser();
  subject = await ts.userClient(["ROLE_USER"], "Card holder");
  unwrap(
    await ts.admin.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", {
      params: { path: { user_id: subject.userId, app_id: "app-salesforce" } },
      body: { limit: { amount: { money: { currencyCode: "USD", units: "250", nanos: 0 } } }, period: "PERIOD_KIND_MONTHLY" },
    }),
  );
});
afterAll(async () => {
  await browser?.close();
  await ts?.stop();
});

/** Fills a CEL input, found by its label within the step `scope`. */
async function typeCel(page: Page, scope: string, label: string, value: string): Promise<void> {
  await page.locator(scope).getByLabel(label, { exact: true }).fill(value);
}

describe("automations in the console", () => {
  it("creates an HMAC automation, copies URL and secret, publishes, and shows the execution of a signed event", async () => {
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP, { beforeSignIn: (p) => screenshot(p, "sign-in-desktop") });
    await page.getByRole("heading", { name: "Automations" }).waitFor();
    await page.getByText("No automations yet.").waitFor();

    // Create, with the incoming-webhook trigger, HMAC, and a source restriction that admits loopback.
    await page.getByRole("link", { name: "New automation" }).click();
    await page.getByLabel("Name").fill("Suspend Salesforce when card lost");
    await page.getByLabel("HMAC (this API's scheme)").check();
    await page.getByLabel("Allowed source CIDRs").fill("127.0.0.0/8\n::1/128");
    await screenshot(page, "automation-new-desktop");
    await page.getByRole("button", { name: "Save" }).click();

    // The complete URL and the secret, shown once, each with a copy button.
    const url = (await page.getByTestId("webhook-url").textContent()) ?? "";
    expect(url).toMatch(new RegExp(`^${ts.url}/api/v1/webhooks/incoming/wh_`));
    await page.getByRole("button", { name: "Copy webhook url" }).click();
    await page.getByRole("button", { name: "Copy webhook url" }).getByText("Copied").waitFor();
    expect(await clipboard(page)).toBe(url);
    await page.getByRole("button", { name: "Copy signing secret" }).click();
    await page.getByRole("button", { name: "Copy signing secret" }).getByText("Copied").waitFor();
    const secret = await clipboard(page);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await page.getByTestId("webhook-secret").textContent()).toBe(secret);
    expect(await page.getByTestId("example-request").textContent()).toContain(`--url '${url}' --secret='${secret}'`);
    await screenshot(page, "automation-created-desktop");

    // Steps, checked against the sample payload as they are typed.
    await page.getByLabel("Sample payload (ctx.trigger)").fill(JSON.stringify({ event: "card.lost", userId: subject.userId, appId: "app-salesforce" }));
    await page.getByRole("button", { name: "Add step" }).click();
    const step1 = 'li[aria-label="Step 1"]';
    await page.locator(step1).getByLabel("Step name").fill("parse");
    await page.locator(step1).getByLabel("Name", { exact: true }).fill("isLost");
    await typeCel(page, step1, "Expression (CEL)", 'ctx.trigger.event == "card.lost" &&');
    await page.locator(step1).getByRole("alert").getByText("syntax error").waitFor();
    await typeCel(page, step1, "Expression (CEL)", 'ctx.trigger.event == "card.lost"');
    await page.locator(step1).getByText("= true").waitFor();

    await page.getByLabel("New step").selectOption("suspendAppLimit");
    await page.getByRole("button", { name: "Add step" }).click();
    const step2 = 'li[aria-label="Step 2"]';
    await page.locator(step2).getByLabel("Step name").fill("suspend");
    await typeCel(page, step2, "Skip if true (CEL, optional)", "!ctx.steps.later.isLost");
    await page.locator(step2).getByRole("alert").getByText('no earlier step is named "later"').waitFor();
    await typeCel(page, step2, "Skip if true (CEL, optional)", "!ctx.steps.parse.isLost");
    await typeCel(page, step2, "Reason (CEL, optional)", '"Card reported lost: " + ctx.trigger.event');
    await page.locator(step2).getByText('= "Card reported lost: card.lost"').waitFor();
    await page.locator(step2).getByText(`= "${subject.userId}"`).waitFor();
    await page.getByText("The steps pass the checks of a save.").waitFor();

    // Reorder and remove: a third step moved above the others is refused (it reads nothing), then removed.
    await page.getByRole("button", { name: "Add step" }).click();
    await page.getByRole("button", { name: "Move step 3 up" }).click();
    expect(await page.locator('li[aria-label="Step 2"]').getByLabel("Step name").inputValue()).toBe("step3");
    await page.getByRole("button", { name: "Remove step 2" }).click();
    await page.locator('li[aria-label="Step 3"]').waitFor({ state: "detached" });
    await page.getByRole("button", { name: "Save steps" }).click();
    await page.getByRole("status").getByText("Steps saved: ").waitFor();
    await page.getByRole("button", { name: "Publish" }).click();
    await page.getByTestId("automation-state").getByText("Published, trigger on").waitFor();
    await screenshot(page, "automation-steps-desktop");

    // A signed event, sent by the sender script with what was copied.
    const sent = await runSendWebhook(["--url", url, `--secret=${secret}`, "--body", JSON.stringify({ event: "card.lost", userId: subject.userId, appId: "app-salesforce" })]);
    expect(sent.out).toContain("=> 200");
    expect(sent.code).toBe(0);
    const delivery = page.getByTestId("delivery").first();
    await delivery.getByTestId("outcome").getByText("executed").waitFor();
    await delivery.getByTestId("execution-state").getByText("done").waitFor();
    expect(await delivery.getByTestId("step-result").nth(0).textContent()).toContain('"isLost": true');
    expect(await delivery.getByTestId("step-result").nth(1).textContent()).toContain('"reason": "Card reported lost: card.lost"');
    await screenshot(page, "automation-delivery-desktop");

    // The curl example, copied from the page, signs correctly too.
    await page.getByRole("tab", { name: "curl" }).click();
    await page.getByRole("button", { name: "Copy example request" }).click();
    await page.getByRole("button", { name: "Copy example request" }).getByText("Copied").waitFor();
    const curl = await clipboard(page);
    const answer = await runToEnd("bash", ["-euo", "pipefail", "-c", curl]);
    expect(answer.out, answer.out).toContain('"outcome":"WEBHOOK_EVENT_OUTCOME_EXECUTED"');
    await page.getByTestId("delivery").nth(1).waitFor(); // the log refreshes by itself

    // Rotate the secret (a new one, shown once: this API's HMAC secret is never the sender's), unpublish, turn the trigger off.
    expect(await page.getByLabel("Sender's secret").count()).toBe(0);
    await page.getByRole("button", { name: "Rotate secret" }).click();
    await page.getByTestId("webhook-secret").filter({ hasNotText: secret }).waitFor();
    await page.getByRole("button", { name: "Unpublish" }).click();
    await page.getByTestId("automation-state").getByText("Draft, trigger on").waitFor();
    await page.getByRole("button", { name: "Turn trigger off" }).click();
    await page.getByTestId("automation-state").getByText("Draft, trigger off").waitFor();
    await context.close();

    // At phone width: the list and the automation, nothing wider than the screen.
    const { context: phone, page: small } = await openConsole(browser, "phone", ts.url, BOOTSTRAP, { beforeSignIn: (p) => screenshot(p, "sign-in-phone") });
    await small.getByRole("link", { name: "Suspend Salesforce when card lost" }).waitFor();
    await expectNoHorizontalScroll(small);
    await screenshot(small, "automations-phone");
    await small.getByRole("link", { name: "Suspend Salesforce when card lost" }).click();
    await small.getByTestId("delivery").first().waitFor();
    await expectNoHorizontalScroll(small);
    await screenshot(small, "automation-phone");
    await phone.close();
  }, 180_000);

  it("deletes an automation after confirming in the page, and the list says so", async () => {
    const made = unwrap(await ts.admin.POST("/api/v1/automations", { body: { automation: { displayName: "Short-lived" } } }));
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP, { path: `#/automations/${made.automation.id}` });
    await page.getByRole("heading", { name: "Short-lived" }).waitFor();
    await page.getByRole("button", { name: "Delete" }).click();
    const question = page.getByRole("alertdialog", { name: "Delete Short-lived?" });
    expect(await question.textContent()).toContain("The executions it already has stay readable through the API.");
    // Cancel sends nothing.
    await question.getByRole("button", { name: "Cancel" }).click();
    expect(await page.getByRole("alertdialog").count()).toBe(0);
    expect((await ts.admin.GET("/api/v1/automations/{id}", { params: { path: { id: made.automation.id! } } })).response.status).toBe(200);

    await page.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("alertdialog", { name: "Delete Short-lived?" }).getByRole("button", { name: "Delete" }).click();
    await page.getByRole("heading", { name: "Automations" }).waitFor();
    await page.getByRole("status").getByText("Automation deleted: Short-lived.").waitFor();
    expect((await ts.admin.GET("/api/v1/automations/{id}", { params: { path: { id: made.automation.id! } } })).response.status).toBe(404);
    await context.close();
  }, 60_000);

  it("shows an API error in words next to the form that caused it", async () => {
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP, { path: "#/automations/new" });
    await page.getByLabel("Name").fill("Bad CIDR");
    await page.getByLabel("Allowed source CIDRs").fill("10.0.0.0/33");
    await page.getByRole("button", { name: "Save" }).click();
    await page.locator("form").getByRole("alert").getByText("400").waitFor();
    expect(await page.locator("form").getByRole("alert").textContent()).toMatch(/Trigger 1 \(Incoming webhook\), allowed source CIDRs/);
    await screenshot(page, "automation-error-desktop");
    await context.close();
  }, 60_000);
});
