// The docs' commands read a credential from the environment or the file a first start writes
// ($CLIENT_ID, $CLIENT_SECRET): never one machine's values, which a reader would paste and fail with.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const markdown = (folder: string) => readdirSync(join(root, folder)).filter((name) => name.endsWith(".md")).map((name) => join(folder, name));
const pages = ["README.md", "scripts/pack-client.README.md", ...markdown("docs"), ...markdown("openapi/guides")];

describe("credentials in the docs", () => {
  it.each(pages)("%s sets no CLIENT_ID or CLIENT_SECRET to a value of its own", (page) => {
    const text = readFileSync(join(root, page), "utf8");
    // `CLIENT_ID=…` in prose, or `=...` as a placeholder, is a hint, not a value.
    const literal = /\b(CLIENT_ID|CLIENT_SECRET|client_id|client_secret)=(?!\$|…|\.\.\.)['"]?[A-Za-z0-9_-]{8,}/g;
    expect(text.match(literal) ?? []).toEqual([]);
  });
});
