// Listeners for senders with schemes of their own, in the console, in a real browser against a real
// server: a GitHub listener shows its Payload URL, content type and Secret once, and its delivery
// log the event GitHub names; a Stripe listener takes Stripe's own whsec_ secret by rotation, shows
// it once and verifies a delivery signed with it; a Standard Webhooks listener with a public key
// has no secret to show or rotate, and one changed to sign with a secret shows the secret it gets.
import { createHmac, generateKeyPairSync, randomBytes, randomUUID } from "node:crypto";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { serverAndBrowserForFile, screenshot, type TestBrowser } from "../support/browser.js";
import { BOOTSTRAP, type TestServer } from "../support/server.js";
import { openConsole } from "./console-helpers.js";

let ts: TestServer;
let browser: TestBrowser;

serverAndBrowserForFile((server, opened) => {
  ts = server;
  browser = opened;
});

/** Creates an automation in the console's form with the listener kind labelled `kind`; `fill` completes the form. */
async function create(page: Page, name: string, kind: string, fill?: () => Promise<void>): Promise<string> {
  await page.getByRole("link", { name: "New automation" }).click();
  await page.getByLabel("Name").fill(name);
  await page.getByLabel(kind, { exact: true }).check();
  await fill?.();
  await page.getByRole("button", { name: "Save" }).click();
  await page.waitForURL(/#\/automations\/aut_/);
  return new URL(page.url()).hash.replace("#/automations/", "");
}

const listenerUrl = (path: string) => new RegExp(`^${ts.url}/api/v1/webhooks/incoming/wh_[A-Za-z0-9]+${path}$`);

describe("listener kinds in the console", () => {
  it("GitHub: the Payload URL, the content type and the Secret once; the delivery log names GitHub's event", async () => {
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP);
    const id = await create(page, "On GitHub pushes", "GitHub");

    const url = (await page.getByTestId("webhook-url").textContent()) ?? "";
    expect(url).toMatch(listenerUrl("/github"));
    await page.getByRole("button", { name: "Copy payload url" }).waitFor();
    expect(await page.getByTestId("sender-setting").textContent()).toBe("Content type: application/json");
    const secret = (await page.getByTestId("webhook-secret").textContent()) ?? "";
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await page.getByRole("button", { name: "Copy secret" }).waitFor();
    await page.getByText("Shown once: copy it now.").waitFor();
    expect(await page.getByTestId("sender-note").textContent()).toContain("Settings → Webhooks");
    expect(await page.getByTestId("example-request").count()).toBe(0);
    await screenshot(page, "listener-github-desktop");

    // A delivery signed as GitHub signs: its X-GitHub-Event is the event's type in the log.
    const body = JSON.stringify({ ref: "refs/heads/main", repository: { full_name: "octo/hello" } });
    const sent = await fetch(url, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "X-GitHub-Delivery": randomUUID(),
        "X-GitHub-Event": "push",
        "X-Hub-Signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
      },
      body,
    });
    expect(sent.status, await sent.text()).toBe(200);
    await page.getByTestId("delivery").first().getByTestId("webhook-event-type").getByText("push", { exact: true }).waitFor();

    // The steps are checked against the sample payload as a delivery from GitHub: ctx.webhook names its event.
    await page.getByRole("button", { name: "Add step" }).click();
    const step = 'li[aria-label="Step 1"]';
    await page.locator(step).getByLabel("Name", { exact: true }).fill("event");
    await page.locator(step).getByLabel("Expression (CEL)", { exact: true }).fill("ctx.webhook.eventType");
    await page.locator(step).getByText('= "push"').waitFor();

    // Shown once: opened again, the page says where the secret went instead of showing it.
    await context.close();
    const { context: later, page: reopened } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP, { path: `#/automations/${id}` });
    await reopened.getByText("The secret was shown when it was issued.").waitFor();
    expect(await reopened.getByTestId("webhook-secret").count()).toBe(0);
    await reopened.getByRole("link", { name: "← Automations" }).click();
    await reopened.getByTestId("automation-trigger").getByText("Webhook, GitHub").waitFor();
    await later.close();
  }, 90_000);

  it("Stripe: the Endpoint URL, then Stripe's own whsec_ secret given by rotation, shown once and verifying a delivery", async () => {
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP);
    await create(page, "On Stripe invoices", "Stripe");

    const url = (await page.getByTestId("webhook-url").textContent()) ?? "";
    expect(url).toMatch(listenerUrl("/stripe"));
    await page.getByRole("button", { name: "Copy endpoint url" }).waitFor();
    expect(await page.getByTestId("webhook-secret").textContent()).toMatch(/^whsec_[A-Za-z0-9]{32}$/);
    expect(await page.getByTestId("sender-note").textContent()).toContain("Stripe makes its own signing secret");

    // Stripe's endpoint secret, pasted into the rotate form.
    const stripes = `whsec_${randomBytes(16).toString("hex")}`;
    await page.getByLabel("Sender's secret").fill(stripes);
    await page.getByRole("button", { name: "Rotate secret" }).click();
    await page.getByRole("status").getByText("Webhook secret replaced by the sender's").waitFor();
    expect(await page.getByTestId("webhook-secret").textContent()).toBe(stripes);
    expect(await page.getByLabel("Sender's secret").inputValue()).toBe("");
    await screenshot(page, "listener-stripe-desktop");

    // A delivery signed as Stripe signs, with that secret.
    const body = JSON.stringify({ id: `evt_${randomBytes(8).toString("hex")}`, type: "invoice.paid", data: { object: {} } });
    const t = Math.floor(ts.clock.now() / 1000);
    const sent = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Stripe-Signature": `t=${t},v1=${createHmac("sha256", stripes).update(`${t}.${body}`).digest("hex")}` },
      body,
    });
    expect(sent.status, await sent.text()).toBe(200);
    await page.getByTestId("delivery").first().getByTestId("webhook-event-type").getByText("invoice.paid", { exact: true }).waitFor();
    await context.close();
  }, 90_000);

  it("Standard Webhooks: with a public key no secret and no rotation; changed to sign with a secret, its whsec_ once", async () => {
    const { x } = generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" });
    const publicKey = `whpk_${Buffer.from(x ?? "", "base64url").toString("base64")}`;
    const { context, page } = await openConsole(browser, "desktop", ts.url, BOOTSTRAP);
    await create(page, "On Svix events", "Standard Webhooks (Svix and others)", () => page.getByLabel("Public key (optional)").fill(publicKey));

    expect(await page.getByTestId("webhook-url").textContent()).toMatch(listenerUrl("/standard-webhooks"));
    await page.getByRole("button", { name: "Copy endpoint url" }).waitFor();
    expect(await page.getByTestId("sender-note").textContent()).toContain("there is no secret");
    expect(await page.getByTestId("webhook-secret").count()).toBe(0);
    expect(await page.getByRole("button", { name: "Rotate secret" }).count()).toBe(0);
    await screenshot(page, "listener-standard-webhooks-desktop");

    // Without the key, the listener verifies v1 signatures with a secret: issued by this save, shown once.
    await page.getByRole("button", { name: "Change trigger" }).click();
    expect(await page.getByLabel("Public key (optional)").inputValue()).toBe(publicKey);
    await page.getByLabel("Public key (optional)").fill("");
    await page.getByRole("button", { name: "Save trigger" }).click();
    await page.getByRole("status").getByText("Trigger saved: Webhook, Standard Webhooks.").waitFor();
    expect(await page.getByTestId("webhook-secret").textContent()).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    await page.getByLabel("Sender's secret").waitFor();
    await page.getByRole("button", { name: "Rotate secret" }).waitFor();
    await context.close();
  }, 90_000);
});
