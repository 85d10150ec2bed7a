// Every answer of the API is JSON sent by `res.json`. Express's goes through `res.send`, which looks the
// media type up again, adds the charset, and asks whether the request is fresh (for ETags, off here),
// for headers that are always the same. This `json` writes them directly: byte for byte what Express
// sent (a HEAD gets the headers alone). The response validator wraps it as it wrapped Express's.
// Why: bench/RESULTS.md, "The request path every operation pays".
import type { Express, Response } from "express";

const JSON_TYPE = "application/json; charset=utf-8";

function json(this: Response, body: unknown): Response {
  // JSON.stringify(undefined) is undefined: an empty body, as Express sent.
  const text = JSON.stringify(body) ?? "";
  if (!this.hasHeader("Content-Type")) this.setHeader("Content-Type", JSON_TYPE);
  this.setHeader("Content-Length", Buffer.byteLength(text));
  this.end(text, "utf8");
  return this;
}

/** Answers `res.json` of `app` as above. */
export function leanJsonAnswers(app: Express): void {
  app.response.json = json as Response["json"];
}
