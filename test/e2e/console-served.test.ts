// How the server serves the console: from files built from this repository, with a CSP that admits
// no other origin, long-lived caching of hashed assets only, and no external URL anywhere in them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";

let ts: TestServer;
beforeAll(async () => {
  ts = await startTestServer();
});
afterAll(async () => ts?.stop());

/** URLs that are names, not addresses: XML namespaces (preact's SVG/MathML) and RFC 2606 placeholders. */
const NOT_FETCHED = /^https?:\/\/(www\.w3\.org\/|[a-z.]*example\.com\b)/;

describe("the console's files", () => {
  it("are served at /console with a CSP that allows only this origin, and reference nothing elsewhere", async () => {
    const page = await fetch(`${ts.url}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("cache-control")).toBe("no-cache");
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toMatch(/https?:|\*|'unsafe-inline'|'unsafe-eval'/);
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");

    const html = await page.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc="\/console\/assets\/)[^>]*>/); // no inline script
    const assets = [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.some((a) => a.endsWith(".js"))).toBe(true);
    expect(assets.some((a) => a.endsWith(".css"))).toBe(true);
    for (const text of [html, ...(await Promise.all(assets.map(async (asset) => {
      const answer = await fetch(ts.url + asset);
      expect(answer.status).toBe(200);
      expect(answer.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(answer.headers.get("content-security-policy")).toBe(csp);
      return answer.text();
    })))]) {
      const external = [...text.matchAll(/(?:https?:)?\/\/[A-Za-z0-9.-]+\.[A-Za-z]{2,}[^\s"'`)]*/g)].map((m) => m[0]).filter((u) => u.startsWith("//") || !NOT_FETCHED.test(u));
      expect(external).toEqual([]);
    }
  });

  it("answers 404 for an asset that does not exist, and the page for /console itself", async () => {
    const missing = await fetch(`${ts.url}/console/assets/nothing.js`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 5, message: "no such console asset" });
    const bare = await fetch(`${ts.url}/console`);
    expect(bare.status).toBe(200);
    expect(await bare.text()).toContain('<div id="app">');
  });
});
