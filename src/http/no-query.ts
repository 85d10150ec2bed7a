// The raw operations (the webhook intake) declare no query parameter and skip the contract
// validator, which refuses an unknown one everywhere else: a query here is refused the same way,
// never read (a sender's signature does not cover it), and not repeated in the answer.
import { invalidField } from "../core/errors.js";

/** 400 when `url` (a request's path and query) carries a query; a bare `?` is none. */
export function refuseQuery(url: string): void {
  const at = url.indexOf("?");
  if (at >= 0 && at < url.length - 1) throw invalidField("query", "must be absent: the webhook intake takes no query parameters");
}
