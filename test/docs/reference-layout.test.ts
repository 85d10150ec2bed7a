// The reference page (generated/docs.html, opened from disk) in Chromium at 1,440 px: every guide's
// code blocks take the width of the page's column, not the half of it Redoc leaves a section with
// no samples, and show every line whole; a code sample's copy button covers none of its code; and
// search snippets keep the space between the words at a line break and between paragraphs.
import { pathToFileURL } from "node:url";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { docsPath } from "../../src/core/package-root.js";
import { launchBrowser, type TestBrowser } from "../support/browser.js";
import { contract } from "../support/contract.js";

/** The guides: the tags of the menu's Guides group, each a section `#/<tag in lower case>`. */
const GUIDES = (contract["x-tagGroups"] as { name: string; tags: string[] }[]).find((g) => g.name === "Guides")!.tags.map((tag) => tag.toLowerCase());

/** How many fenced code blocks the guide's Markdown holds. */
const fencedBlocks = (guide: string): number => {
  const tag = (contract.tags as { name: string; description: string }[]).find((t) => t.name.toLowerCase() === guide)!;
  return tag.description.split("\n").filter((line) => line.startsWith("```")).length / 2;
};

const SUSPEND = "subjectapplimits/svc.api.funds.v1.subjectapplimitservice.suspend";

interface Box {
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/** A guide code block as laid out: its box, its content's width, and the width its section's row offers (the row less the middle panel's padding). */
interface GuideBlock {
  section: string;
  width: number;
  scrollWidth: number;
  clientWidth: number;
  columnWidth: number;
}

let browser: TestBrowser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  browser = await launchBrowser();
  context = await browser.browser.newContext({ viewport: { width: 1440, height: 900 } });
  page = await context.newPage();
  await page.goto(pathToFileURL(docsPath).href);
  // "Loading..." until Redoc has started and indexed the contract.
  await page.getByText("Loading...").waitFor({ state: "detached", timeout: 20_000 });
}, 60_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
});

/**
 * Every code block of the guide at `#/<guide>`. Redoc renders sections as they near the window, so
 * the page is scrolled down the guide, half a window at a time, measuring what each step rendered,
 * until `expected` blocks are measured or the page ends.
 */
async function guideBlocks(guide: string, expected: number): Promise<GuideBlock[]> {
  await page.goto(`${pathToFileURL(docsPath).href}#/${guide}`);
  await page.locator(`[data-section-id="/${guide}"]`).waitFor();
  // Redoc may still be laying the page out after the hash changed: its first block shows it has.
  if (expected > 0) await page.locator(`[data-section-id^="/${guide}"] [data-testid="middle-panel"] pre`).first().waitFor();
  // A string, evaluated in the page: the tests are typed for Node, without the DOM's globals.
  return page.evaluate<GuideBlock[]>(`(async () => {
    const found = new Map();
    const measure = (pre) => {
      const panel = pre.closest('[data-testid="middle-panel"]');
      const style = getComputedStyle(panel);
      return {
        section: pre.closest("[data-section-id]").getAttribute("data-section-id"),
        width: pre.getBoundingClientRect().width,
        scrollWidth: pre.scrollWidth,
        clientWidth: pre.clientWidth,
        columnWidth: panel.parentElement.getBoundingClientRect().width - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight),
      };
    };
    // The end of the page counts once it has held for a while with nothing new rendered: a page
    // still being laid out may look short for a frame.
    let framesAtEnd = 0;
    for (;;) {
      const before = found.size;
      for (const section of document.querySelectorAll('[data-section-id^="/${guide}"]')) {
        section.querySelectorAll('[data-testid="middle-panel"] pre').forEach((pre, i) => found.set(section.getAttribute("data-section-id") + "#" + i, measure(pre)));
      }
      const atEnd = scrollY + innerHeight >= document.documentElement.scrollHeight;
      framesAtEnd = atEnd && found.size === before ? framesAtEnd + 1 : 0;
      if (found.size >= ${expected} || framesAtEnd >= 30) return [...found.values()];
      scrollBy(0, innerHeight / 2);
      await new Promise((rendered) => requestAnimationFrame(() => requestAnimationFrame(rendered)));
    }
  })()`);
}

/** Search results' texts for `query`, as the dialog lists them. */
async function searchSnippets(query: string): Promise<string[]> {
  await page.getByTestId("search-trigger").getByText("Search").click();
  await page.getByPlaceholder("Search docs...").fill(query);
  const results = page.getByTestId("search-dialog").locator("[data-component-name='Search/SearchItem']");
  await results.first().waitFor({ timeout: 15_000 });
  const texts = await results.allInnerTexts();
  await page.keyboard.press("Escape");
  return texts;
}

describe("the reference page at 1,440 px", () => {
  it.each(GUIDES)("#/%s: every code block takes the column's width and shows its lines whole", async (guide) => {
    const blocks = await guideBlocks(guide, fencedBlocks(guide));
    // Every block of the guide's Markdown is measured: none is left unrendered.
    expect(blocks.length).toBe(fencedBlocks(guide));
    const narrow = blocks.filter((b) => b.width < b.columnWidth - 1).map((b) => `${b.section}: ${Math.round(b.width)} px in a column of ${Math.round(b.columnWidth)} px`);
    const cut = blocks.filter((b) => b.scrollWidth > b.clientWidth).map((b) => `${b.section}: ${b.scrollWidth} px of code in ${b.clientWidth} px`);
    expect([...narrow, ...cut]).toEqual([]);
  });

  it("a code sample's copy button covers none of its code, the typed client's included", async () => {
    await page.goto(`${pathToFileURL(docsPath).href}#/${SUSPEND}`);
    const samples = page.locator(`[id="${SUSPEND}"] .panel-request-samples`);
    await samples.getByText('curl -X POST "$BASE_URL/api/v1/funds/subject-app-limits/').waitFor();
    const overlaps = async () => {
      const code = (await samples.locator("pre").boundingBox())!;
      const button = (await samples.getByTestId("copy-button").filter({ visible: true }).first().boundingBox())!;
      const [a, b]: Box[] = [code, button].map((r) => ({ left: r.x, right: r.x + r.width, top: r.y, bottom: r.y + r.height }));
      return a!.left < b!.right && b!.left < a!.right && a!.top < b!.bottom && b!.top < a!.bottom;
    };
    expect(await overlaps()).toBe(false);
    await samples.getByRole("button", { name: "curl", exact: true }).click();
    await page.getByRole("menuitem", { name: "Typed client" }).click();
    await samples.getByText('import { createApiClient, unwrap } from "@tenant/access-api-client";').waitFor();
    expect(await overlaps()).toBe(false);
  });

  it("search snippets keep the space at a line break and between paragraphs", async () => {
    // Quickstart, step 1: two lines of one paragraph ("...header." / "The token is valid...").
    const snippets = await searchSnippets("credential goes in the form body");
    expect(snippets.join("\n")).toContain("never in the URL or a header. The token is valid");
    // The token operation's description breaks its line after "section 4.4".
    expect((await searchSnippets("client-credentials grant")).join("\n")).toContain("section 4.4 client-credentials");
  });
});
