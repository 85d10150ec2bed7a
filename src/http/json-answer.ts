// Every answer of the API is JSON sent by `res.json`. Express's goes through `res.send`, which
// looks the media type up again, parses it back to add the charset, takes the body's length and
// asks whether the request is fresh (for ETags, which this app turns off): about 6% of a
// single-row read's CPU in a profile, for headers that are always the same. This `json` writes them
// directly; what the client receives is byte for byte what Express sent (a HEAD gets the headers
// alone, as Node drops a body answered to HEAD). The response validator wraps this function as it
// wrapped Express's.
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
