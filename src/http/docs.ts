// Serves the Redoc page (generated/docs.html, built by scripts/docs.mjs) at /docs. The page holds
// everything it runs, so its Content-Security-Policy admits no other origin, and no script but its own
// inline ones, by their hashes. The page is revalidated (ETag), and read again when the file changes,
// so a regenerated page shows at once. Each directive and why: docs/partners.md, "The API reference
// (Redoc)".
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import type { Request, Response } from "express";
import { notFound } from "../core/errors.js";
import { setPageSecurityHeaders } from "./console.js";

export const DOCS_PATH = "/docs";

const INLINE_SCRIPT = /<script(?:\s[^>]*)?>([\s\S]*?)<\/script>/g;

/** The policy of a docs page: its inline scripts (and nothing else) may run. */
export function docsCsp(html: string): string {
  const hashes = [...html.matchAll(INLINE_SCRIPT)].map((m) => `'sha256-${createHash("sha256").update(m[1]!).digest("base64")}'`);
  return [
    "default-src 'none'",
    `script-src ${[...new Set(hashes)].join(" ")}`,
    "style-src 'unsafe-inline'",
    "img-src data:",
    "font-src data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

interface LoadedPage {
  mtimeMs: number;
  body: Buffer;
  etag: string;
  csp: string;
}

/** The handler of GET /docs for the page at `docsPath`. */
export function docsPage(docsPath: string): (req: Request, res: Response) => void {
  let page: LoadedPage | undefined;
  const load = (): LoadedPage => {
    if (!existsSync(docsPath)) throw notFound("DOCS_NOT_BUILT", "the docs are not built: run `npm run docs`");
    const { mtimeMs } = statSync(docsPath);
    if (page?.mtimeMs !== mtimeMs) {
      const body = readFileSync(docsPath);
      page = { mtimeMs, body, etag: `"${createHash("sha256").update(body).digest("base64url")}"`, csp: docsCsp(body.toString("utf8")) };
    }
    return page;
  };
  return (req, res) => {
    const { body, etag, csp } = load();
    setPageSecurityHeaders(res, csp);
    res.setHeader("Cache-Control", "no-cache");
    res.setHeader("ETag", etag);
    if (req.fresh) {
      res.status(304).end();
      return;
    }
    res.type("html").send(body);
  };
}
