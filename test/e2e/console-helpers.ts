import type { Page } from "playwright-core";
import { expect } from "vitest";

export async function signIn(page: Page, credentials: { clientId: string; clientSecret: string }): Promise<void> {
  await page.getByLabel("Client id").fill(credentials.clientId);
  await page.getByLabel("Client secret").fill(credentials.clientSecret);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("button", { name: "Sign out" }).waitFor();
}

/** The page fits the viewport's width (wide tables scroll inside their own box). */
export async function expectNoHorizontalScroll(page: Page): Promise<void> {
  // A string, evaluated in the page: the tests are typed for Node, without the DOM's globals.
  const [scrollWidth, innerWidth] = await page.evaluate<[number, number]>("[document.documentElement.scrollWidth, window.innerWidth]");
  expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
}
