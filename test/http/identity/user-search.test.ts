// UserService.List's `query`: users found by part of their name or email, or by id, paged like the
// whole list, on each database.
import { beforeAll, afterAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { startTestServer, type TestServer } from "../../support/server.js";

let ts: TestServer;
const ids = new Map<string, string>();

const PEOPLE = [
  ["Ada Lovelace", "ada@analytical.example"],
  ["Grace HOPPER", "grace@navy.example"],
  ["Percent 100% Sure", "percent@example.com"],
  ["Percent 1000 Sure", "thousand@example.com"],
  ["Under_Score", "under@example.com"],
  ["UnderXScore", "underx@example.com"],
  ["Back\\slash", "back@example.com"],
  ["Émile Zola", "emile@example.com"],
] as const;

beforeAll(async () => {
  ts = await startTestServer();
  for (const [displayName, email] of PEOPLE) {
    const { user } = unwrap(await ts.admin.POST("/api/v1/users", { body: { displayName, email, roles: ["ROLE_USER"] } }));
    ids.set(displayName, user.id!);
  }
});
afterAll(async () => ts?.stop());

async function search(query: string, page: { page_size?: number; page_token?: string } = {}) {
  return ts.admin.GET("/api/v1/users", { params: { query: { query, ...page } } });
}

async function names(query: string): Promise<string[]> {
  return unwrap(await search(query)).list.map(({ user }) => user.displayName);
}

describe("GET /api/v1/users?query=", () => {
  it("finds users by part of the name or the email, A to Z in any case, in id order", async () => {
    expect(await names("lovel")).toEqual(["Ada Lovelace"]);
    expect(await names("NAVY.EX")).toEqual(["Grace HOPPER"]);
    expect(await names("hopper")).toEqual(["Grace HOPPER"]);
    const percents = unwrap(await search("percent")).list.map(({ user }) => user.id);
    expect(percents).toEqual([ids.get("Percent 100% Sure"), ids.get("Percent 1000 Sure")].sort());
    expect(await names("nobody")).toEqual([]);
  });

  it("folds no letter beyond Z, so both databases answer alike", async () => {
    expect(await names("Émile")).toEqual(["Émile Zola"]);
    expect(await names("émile")).toEqual([]);
  });

  it("finds a user by the whole id, not by part of it", async () => {
    const id = ids.get("Ada Lovelace")!;
    expect(await names(id)).toEqual(["Ada Lovelace"]);
    expect(await names(id.slice(0, -1)).then((found) => found.includes("Ada Lovelace"))).toBe(false);
  });

  it("takes %, _ and \\ as plain characters", async () => {
    expect(await names("100%")).toEqual(["Percent 100% Sure"]);
    expect(await names("%")).toEqual(["Percent 100% Sure"]);
    expect(await names("r_s")).toEqual(["Under_Score"]);
    expect(await names("k\\s")).toEqual(["Back\\slash"]);
  });

  it("pages through the matches with the same page size and tokens", async () => {
    const more = 13;
    for (let i = 0; i < more; i++) unwrap(await ts.admin.POST("/api/v1/users", { body: { displayName: `Paged Person ${i}`, email: `paged${i}@example.com`, roles: ["ROLE_USER"] } }));
    const first = unwrap(await search("paged person", { page_size: 10 }));
    expect(first.list).toHaveLength(10);
    expect(first.nextPageToken).not.toBe("");
    const second = unwrap(await search("paged person", { page_size: 10, page_token: first.nextPageToken }));
    expect(second.nextPageToken).toBe("");
    const seen = [...first.list, ...second.list].map(({ user }) => user.id!);
    expect(seen).toHaveLength(more);
    expect(seen).toEqual([...seen].sort());
  });

  it("refuses a page token issued for another query, or for none (400 INVALID_PAGE_TOKEN)", async () => {
    const { nextPageToken } = unwrap(await search("example", { page_size: 10 }));
    expect(nextPageToken).not.toBe("");
    const all = unwrap(await ts.admin.GET("/api/v1/users", { params: { query: { page_size: 10 } } }));
    for (const [query, token] of [["exampl", nextPageToken], ["example", all.nextPageToken]] as const) {
      const refused = await search(query, { page_size: 10, page_token: token });
      expect(refused.response.status).toBe(400);
      expect(JSON.stringify(refused.error)).toContain("INVALID_PAGE_TOKEN");
    }
    const unfiltered = await ts.admin.GET("/api/v1/users", { params: { query: { page_size: 10, page_token: nextPageToken } } });
    expect(unfiltered.response.status).toBe(400);
  });

  it("refuses a query of more than 100 characters, or an empty one (400)", async () => {
    expect((await search("a".repeat(100))).response.status).toBe(200);
    const long = await search("a".repeat(101));
    expect(long.response.status).toBe(400);
    expect(long.error).toMatchObject({ code: 3, message: "query.query: must NOT have more than 100 characters" });
    expect((await search("")).response.status).toBe(400);
  });
});
