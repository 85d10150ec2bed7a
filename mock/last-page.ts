// A list's example shows a next page (a non-empty `nextPageToken`), and Prism answers every request
// with the example: a client following the token would be given the same page and token forever.
// Asked for the page after the example (the example's own token sent back), the mock answers the
// example as the last page, so a pagination loop written against the mock ends.

/** Prism's success body `text`, with an empty `nextPageToken` when it is the `pageToken` the request sent. */
export function asLastPage(text: string, pageToken: unknown): string {
  if (typeof pageToken !== "string" || pageToken === "") return text;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return text;
  }
  if (typeof body !== "object" || body === null || (body as { nextPageToken?: unknown }).nextPageToken !== pageToken) return text;
  return JSON.stringify({ ...body, nextPageToken: "" });
}
