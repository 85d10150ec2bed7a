// What every console test does: open the console in a fresh context (nothing signed in) and sign in.
import type { BrowserContext, Page } from "playwright-core";
import { expect } from "vitest";
import type { TestBrowser, VIEWPORTS } from "../support/browser.js";

export async function signIn(page: Page, credentials: { clientId: string; clientSecret: string }): Promise<void> {
  await page.getByLabel("Client id").fill(credentials.clientId);
  await page.getByLabel("Client secret").fill(credentials.clientSecret);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("button", { name: "Sign out" }).waitFor();
}

/** The page fits the viewport's width (tables wrap their cells; on a phone their rows are cards). */
export async function expectNoHorizontalScroll(page: Page): Promise<void> {
  // A string, evaluated in the page: the tests are typed for Node, without the DOM's globals.
  const [scrollWidth, innerWidth] = await page.evaluate<[number, number]>("[document.documentElement.scrollWidth, window.innerWidth]");
  expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
}

/** A fresh context at `viewport`, on `path` of the console (a `#/...` fragment), signed in with `credentials`. */
export async function openConsole(
  browser: TestBrowser,
  viewport: keyof typeof VIEWPORTS,
  url: string,
  credentials: { clientId: string; clientSecret: string },
  options: { path?: string; beforeSignIn?: (page: Page) => Promise<void> } = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.context(viewport);
  const page = await context.newPage();
  await page.goto(`${url}/console/${options.path ?? ""}`);
  await options.beforeSignIn?.(page);
  await signIn(page, credentials);
  return { context, page };
}
