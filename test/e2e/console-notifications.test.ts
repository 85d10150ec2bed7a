// Notifications in the console, in a real browser against a real server whose notify steps post to
// local receivers answering 503 (a retry schedule long enough that executions stay parked): a parked
// execution with its next attempt and its attempts; the notification destinations view listing the
// failing destination, cleared, disabled and enabled again after a confirmation (not offered to a
// fund admin); states the console does not know; the bulk redrive form with its counts and continuation.
import { once } from "node:events";
import http from "node:http";
import type net from "node:net";
import type { Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, screenshot, type TestBrowser } from "../support/browser.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../support/server.js";
import { createHooked, evaluateStep, expectAccepted, sendHmac, settled } from "../http/webhooks/helpers.js";
import { expectNoHorizontalScroll, openConsole } from "./console-helpers.js";

let ts: TestServer;
let browser: TestBrowser;
const receivers: http.Server[] = [];

beforeAll(async () => {
  ts = await startTestServer({ NOTIFICATION_ALLOW_INSECURE: "1", NOTIFY_RETRY_SCHEDULE: "1h,1h,1h", NOTIFY_TIMEOUT_SECONDS: "2", BULK_REDRIVE_MAX_PER_CALL: "2" });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await ts?.stop();
  await Promise.all(receivers.map((r) => new Promise((done) => r.close(done))));
});

/** A receiver answering 503 to everything, and an automation (published) notifying it after `steps`. */
async function failingHook(name: string, before: unknown[] = []) {
  const server = http.createServer((req, res) => req.resume().on("end", () => res.writeHead(503).end("down for maintenance")));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  receivers.push(server);
  const destination = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  const hook = await createHooked(ts, { displayName: name, steps: [...before, { stepName: "tell", notify: { url: `http://${destination}/hook`, bodyCel: '{"n": ctx.trigger.n}' } }] as never });
  const send = async (n: number) => settled(ts, expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ n }))).automationExecutionId!);
  return { hook, destination, send };
}

describe("notifications in the console", () => {
  it("shows a parked execution with its next attempt and its notify step's attempts", async () => {
    const { hook, send } = await failingHook("Tell the partner");
    const parked = await send(1);
    expect(parked.state).toBe("AUTOMATION_EXECUTION_STATE_PARKED");
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP, { path: `#/automations/${hook.id}` });
    const execution = page.getByTestId("delivery").first().getByTestId("execution");
    await execution.getByTestId("execution-state").getByText("parked").waitFor();
    expect(await execution.getByTestId("next-attempt").locator("time").getAttribute("datetime")).toBe(parked.nextAttemptAt);
    const attempt = execution.getByTestId("attempt");
    expect(await attempt.count()).toBe(1);
    expect(await attempt.getByTestId("attempt-status").textContent()).toBe("HTTP 503");
    expect(await attempt.getByTestId("attempt-error").textContent()).toBe("HTTP_STATUS");
    expect(await execution.getByTestId("step-result").textContent()).toContain("pending");
    await screenshot(page, "execution-parked-desktop");
    await context.close();

    // At phone width, nothing wider than the screen.
    const { context: phone, page: small } = await openConsole(browser, "phone", ts.url, BOOTSTRAP, { path: `#/automations/${hook.id}` });
    await small.getByTestId("attempt").first().waitFor();
    await expectNoHorizontalScroll(small);
    await screenshot(small, "execution-parked-phone");
    await phone.close();
  }, 90_000);

  it("shows an execution state and a destination state it does not know by their names", async () => {
    const { hook, send } = await failingHook("Tell a third partner");
    await send(1);
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP, { path: `#/automations/${hook.id}` });
    // The enumerations may gain values: the answers are rewritten in the browser to hold one.
    const rewrite = (from: string, to: string) => async (route: Route) => {
      const response = await route.fetch();
      await route.fulfill({ response, body: (await response.text()).replaceAll(from, to) });
    };
    await page.route((url) => url.pathname === "/api/v1/automation_executions", rewrite("AUTOMATION_EXECUTION_STATE_PARKED", "AUTOMATION_EXECUTION_STATE_HIBERNATING"));
    await page.getByTestId("execution-state").getByText("hibernating").waitFor();
    await page.route((url) => url.pathname === "/api/v1/notification-destinations", rewrite("NOTIFICATION_DESTINATION_STATE_FAILING", "NOTIFICATION_DESTINATION_STATE_QUARANTINED"));
    await page.getByRole("link", { name: "Notification destinations" }).click();
    await page.getByTestId("destination-state").getByText("quarantined").first().waitFor();
    await context.close();
  }, 90_000);

  it("is not offered to a fund administrator", async () => {
    const fundAdmin = await ts.userClient(["ROLE_FUND_ADMIN"], "Fund admin");
    const { context, page } = await openConsole(browser, "desktop", ts.url, fundAdmin);
    await page.getByRole("link", { name: "Fund limits" }).waitFor();
    expect(await page.getByRole("link", { name: "Notification destinations" }).count()).toBe(0);
    await context.close();
  }, 60_000);

  it("lists a failing destination, and disables and enables it after a confirmation", async () => {
    const { destination, send } = await failingHook("Tell the other partner");
    await send(1);
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP);
    await page.getByRole("link", { name: "Notification destinations" }).click();
    await page.getByRole("heading", { name: "Notification destinations" }).waitFor();
    const row = page.getByTestId("destination").filter({ hasText: destination });
    expect(await row.getByTestId("destination-state").textContent()).toBe("failing");
    expect(await row.getByTestId("destination-failures").textContent()).toBe("1");
    expect(await row.getByTestId("destination-error").textContent()).toBe("HTTP 503");
    await screenshot(page, "destinations-desktop");

    // Enable on a failing one clears its failures (a destination known to be up again).
    await row.getByRole("button", { name: `Enable ${destination}` }).click();
    await page.getByRole("alertdialog", { name: `Enable ${destination}?` }).getByRole("button", { name: "Enable", exact: true }).click();
    await page.getByTestId("destination-result").getByText(`${destination} is now healthy.`).waitFor();
    await row.getByTestId("destination-state").getByText("healthy").waitFor();
    expect(await row.getByRole("button", { name: `Enable ${destination}` }).count()).toBe(0);
    await send(2);
    await page.getByRole("button", { name: "Refresh" }).click();
    await row.getByTestId("destination-state").getByText("failing").waitFor();

    await row.getByRole("button", { name: `Disable ${destination}` }).click();
    const dialog = page.getByRole("alertdialog", { name: `Disable ${destination}?` });
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "detached" });
    expect(await row.getByTestId("destination-state").textContent()).toBe("failing");
    await row.getByRole("button", { name: `Disable ${destination}` }).click();
    await dialog.getByRole("button", { name: "Disable", exact: true }).click();
    await page.getByTestId("destination-result").getByText(`${destination} is now disabled.`).waitFor();
    await row.getByTestId("destination-state").getByText("disabled").waitFor();
    expect(await row.getByRole("button", { name: `Disable ${destination}` }).count()).toBe(0);

    await row.getByRole("button", { name: `Enable ${destination}` }).click();
    await page.getByRole("alertdialog", { name: `Enable ${destination}?` }).getByRole("button", { name: "Enable", exact: true }).click();
    await page.getByTestId("destination-result").getByText(`${destination} is now healthy.`).waitFor();
    await row.getByTestId("destination-state").getByText("healthy").waitFor();
    expect(await row.getByTestId("destination-failures").textContent()).toBe("0");
    await context.close();

    const { context: phone, page: small } = await openConsole(browser, "phone", ts.url, BOOTSTRAP, { path: "#/destinations" });
    await small.getByTestId("destination").first().waitFor();
    await expectNoHorizontalScroll(small);
    await screenshot(small, "destinations-phone");
    await phone.close();
  }, 90_000);

  it("redrives an automation's failed executions of a range, continuing while the answer says more remain", async () => {
    const since = new Date(ts.clock.now() - 60_000).toISOString();
    // n = 0 fails its first step (a field the payload lacks): a failed execution; the others park.
    const { hook, send } = await failingHook("Redrive me", [evaluateStep("check", { q: "ctx.trigger.n > 0 ? 1 : ctx.trigger.missing" })]);
    // A second apart, so that "oldest first" is this order.
    expect((await send(0)).state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    ts.clock.set(ts.clock.now() + 1_000);
    expect((await send(1)).state).toBe("AUTOMATION_EXECUTION_STATE_PARKED");
    ts.clock.set(ts.clock.now() + 1_000);
    expect((await send(2)).state).toBe("AUTOMATION_EXECUTION_STATE_PARKED");
    ts.clock.set(ts.clock.now() + 60_000);
    const until = new Date(ts.clock.now()).toISOString();

    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP, { path: `#/automations/${hook.id}` });
    await page.getByRole("button", { name: "Redrive failed executions…" }).click();
    await page.getByLabel("Since (RFC 3339)").fill("yesterday");
    await page.getByRole("button", { name: "Redrive…" }).click();
    await page.getByRole("alert").getByText("Since: an RFC 3339 date-time").waitFor();
    expect(await page.getByRole("alertdialog").count()).toBe(0);
    await page.getByLabel("Since (RFC 3339)").fill(since);
    await page.getByLabel("Until (RFC 3339)").fill(until);
    await page.getByRole("button", { name: "Redrive…" }).click();
    await page.getByRole("alertdialog", { name: "Redrive these executions?" }).getByRole("button", { name: "Redrive", exact: true }).click();
    const result = page.getByTestId("redrive-result");
    await result.getByText("One call").waitFor();
    // BULK_REDRIVE_MAX_PER_CALL is 2: the oldest two (the failed one, then a parked one).
    expect(await result.getByTestId("redrive-examined").textContent()).toBe("2");
    expect(await result.getByTestId("redrive-redriven").textContent()).toBe("1");
    expect(await result.getByTestId("redrive-made-due").textContent()).toBe("1");
    await screenshot(page, "redrive-continuation-desktop");
    await result.getByRole("button", { name: "Continue" }).click();
    await result.getByText("2 calls").waitFor();
    await result.getByTestId("redrive-complete").waitFor();
    expect(await result.getByTestId("redrive-examined").textContent()).toBe("3");
    expect(await result.getByTestId("redrive-made-due").textContent()).toBe("2");

    // An empty range is the server's refusal, in words.
    await page.getByLabel("Until (RFC 3339)").fill(since);
    await page.getByRole("button", { name: "Redrive…" }).click();
    await page.getByRole("alertdialog", { name: "Redrive these executions?" }).getByRole("button", { name: "Redrive", exact: true }).click();
    await page.getByRole("alert").getByText("must be later than since").waitFor();
    await screenshot(page, "redrive-desktop");
    await context.close();
  }, 90_000);
});
