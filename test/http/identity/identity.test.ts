// Identity through HTTP: the client-credentials token endpoint, bearer access tokens, roles, users
// and credentials, on a real server with a fresh database.
import { generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { responseErrors } from "../../support/contract.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../../support/server.js";

let ts: TestServer;
beforeAll(async () => {
  ts = await startTestServer();
});
afterAll(async () => ts?.stop());

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

async function token(fields: Record<string, string>, init: { headers?: Record<string, string>; query?: string } = {}) {
  const response = await fetch(`${ts.url}/auth/v1/token${init.query ?? ""}`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", ...init.headers },
    body: form(fields),
  });
  const body = (await response.json()) as Record<string, any>;
  expect(responseErrors("svc.api.iam.v1.TokenService.CreateToken", response.status, body)).toEqual([]);
  return { status: response.status, body, headers: response.headers };
}

const grant = (clientId = BOOTSTRAP.clientId, clientSecret = BOOTSTRAP.clientSecret) => ({
  grant_type: "client_credentials",
  client_id: clientId,
  client_secret: clientSecret,
});

async function api(path: string, accessToken: string | undefined, init: RequestInit = {}) {
  const response = await fetch(ts.url + path, {
    ...init,
    headers: { ...(accessToken ? { Authorization: `Bearer ${accessToken}` } : {}), ...(init.headers as Record<string, string>) },
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, any>) : undefined, headers: response.headers };
}

const reasonOf = (body: Record<string, any> | undefined) => body?.details?.find((d: any) => d["@type"].endsWith("ErrorInfo"))?.reason;

describe("POST /auth/v1/token (client credentials, client_secret_post)", () => {
  it("issues a short-lived Bearer token for valid credentials in the form body, not cached", async () => {
    const r = await token(grant());
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ token_type: "Bearer", expires_in: 900 });
    expect(r.body.access_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(r.headers.get("cache-control")).toBe("no-store");
    const me = await api("/api/v1/users", r.body.access_token);
    expect(me.status).toBe(200);
  });

  it("refuses credentials in an Authorization: Basic header (invalid_request)", async () => {
    const basic = Buffer.from(`${BOOTSTRAP.clientId}:${BOOTSTRAP.clientSecret}`).toString("base64");
    const r = await token({ grant_type: "client_credentials" }, { headers: { Authorization: `Basic ${basic}` } });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe("invalid_request");
    expect(r.headers.get("cache-control")).toBe("no-store");
  });

  it("refuses credentials in the query string (invalid_request), even with a valid body", async () => {
    const r = await token(grant(), { query: `?client_id=${BOOTSTRAP.clientId}&client_secret=${BOOTSTRAP.clientSecret}` });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe("invalid_request");
    expect(JSON.stringify(r.body)).not.toContain(BOOTSTRAP.clientSecret);
  });

  it("answers invalid_client (401) for a wrong secret and for an unknown client, alike", async () => {
    const wrong = await token(grant(BOOTSTRAP.clientId, "not-the-secret"));
    const unknown = await token(grant("no-such-client", "whatever-secret"));
    for (const r of [wrong, unknown]) {
      expect(r.status).toBe(401);
      expect(r.body.error).toBe("invalid_client");
      expect(r.body.code).toBe(16);
      expect(r.headers.get("cache-control")).toBe("no-store");
    }
    expect(wrong.body.message).toBe(unknown.body.message);
  });

  it("refuses other grant types and missing fields", async () => {
    expect((await token({ ...grant(), grant_type: "password" })).status).toBe(400);
    expect((await token({ grant_type: "client_credentials", client_id: BOOTSTRAP.clientId })).body.error).toBe("invalid_request");
  });

  it("throttles repeated failures from one client id (429 with Retry-After), then lets it in after the window", async () => {
    const { clientId, clientSecret } = await ts.userClient(["ROLE_USER"]);
    for (let i = 0; i < 5; i++) expect((await token(grant(clientId, "wrong-secret-" + i))).status).toBe(401);
    const throttled = await token(grant(clientId, clientSecret));
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get("retry-after"))).toBeGreaterThan(0);
    ts.clock.advance(5 * 60_000 + 1000);
    expect((await token(grant(clientId, clientSecret))).status).toBe(200);
  });
});

describe("bearer access tokens on /api/ operations", () => {
  it("missing, malformed, forged and expired tokens are 401 with the error body", async () => {
    const good = (await token(grant())).body.access_token as string;
    const { privateKey } = await generateKeyPair("ES256");
    const [header] = good.split(".");
    const forged = await new SignJWT({ cid: "x" })
      .setProtectedHeader(JSON.parse(Buffer.from(header!, "base64url").toString()) as { alg: string; kid: string })
      .setSubject("someone")
      .setIssuedAt()
      .setExpirationTime("10m")
      .sign(privateKey);
    const tampered = good.slice(0, -4) + (good.endsWith("AAAA") ? "BBBB" : "AAAA");
    for (const [name, auth] of [
      ["missing", undefined],
      ["not bearer", `Basic ${Buffer.from("a:b").toString("base64")}`],
      ["malformed", "Bearer not-a-jwt"],
      ["forged", `Bearer ${forged}`],
      ["tampered", `Bearer ${tampered}`],
      ["alg none", `Bearer ${Buffer.from('{"alg":"none"}').toString("base64url")}.${good.split(".")[1]}.`],
    ] as const) {
      const r = await fetch(`${ts.url}/api/v1/users`, { headers: auth ? { Authorization: auth } : {} });
      expect(r.status, name).toBe(401);
      const body = (await r.json()) as Record<string, any>;
      expect(responseErrors("svc.api.iam.v1.UserService.List", 401, body), name).toEqual([]);
    }
    // Accepted once (its verification is then cached), and refused all the same once expired.
    expect((await api("/api/v1/users", good)).status).toBe(200);
    ts.clock.advance(901_000);
    const expired = await api("/api/v1/users", good);
    expect(expired.status).toBe(401);
    expect(expired.body?.message).toContain("expired");
  });

  it("a revoked credential's tokens stop working at once", async () => {
    const { userId, clientId, clientSecret } = await ts.userClient(["ROLE_FUND_ADMIN"]);
    const t = (await token(grant(clientId, clientSecret))).body.access_token as string;
    expect((await api("/api/v1/funds/subject-app-limits/search", t, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" })).status).not.toBe(401);
    const creds = unwrap(await ts.admin.GET("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: userId } } }));
    const id = creds.list[0]!.credential.id!;
    const revoked = unwrap(await ts.admin.POST("/api/v1/users/{user_id}/credentials/{credential_id}/revoke", { params: { path: { user_id: userId, credential_id: id } }, body: {} }));
    expect(revoked.credential.revokedAt).toBeTruthy();
    const again = unwrap(await ts.admin.POST("/api/v1/users/{user_id}/credentials/{credential_id}/revoke", { params: { path: { user_id: userId, credential_id: id } }, body: {} }));
    expect(again.credential.revokedAt).toBe(revoked.credential.revokedAt);
    expect((await api("/api/v1/funds/policy", t)).status).toBe(401);
    expect((await token(grant(clientId, clientSecret))).body.error).toBe("invalid_client");
  });

  it("a role that may not call the operation gets 403, before its input is even looked at", async () => {
    const user = await ts.userClient(["ROLE_USER"]);
    const fundAdmin = await ts.userClient(["ROLE_FUND_ADMIN"]);
    const u = await user.client.GET("/api/v1/users", {});
    expect(u.response.status).toBe(403);
    expect(reasonOf(u.error as Record<string, any>)).toBe("ROLE_NOT_ALLOWED");
    expect((await fundAdmin.client.POST("/api/v1/users", { body: { displayName: "x", email: "x@example.com", roles: ["ROLE_SUPER_ADMIN"] } })).response.status).toBe(403);
    expect((await user.client.GET("/api/v1/funds/app-caps", {})).response.status).toBe(403);
    expect((await fundAdmin.client.GET("/api/v1/funds/app-caps", {})).response.status).toBe(200);
    const t = (await token(grant(user.clientId, user.clientSecret))).body.access_token as string;
    const bad = await api("/api/v1/users", t, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{not json" });
    expect(bad.status).toBe(403);
  });
});

describe("users and credentials (super admins)", () => {
  it("creates, gets and lists users; a taken email (any case) is 409; unknown ids 404", async () => {
    const created = unwrap(await ts.admin.POST("/api/v1/users", { body: { displayName: "Grace Hopper", email: "Grace@Example.com", roles: ["ROLE_FUND_ADMIN"] } }));
    expect(created.user).toMatchObject({ displayName: "Grace Hopper", email: "Grace@Example.com", roles: ["ROLE_FUND_ADMIN"] });
    const got = unwrap(await ts.admin.GET("/api/v1/users/{user_id}", { params: { path: { user_id: created.user.id! } } }));
    expect(got.user).toEqual(created.user);
    const dup = await ts.admin.POST("/api/v1/users", { body: { displayName: "Imposter", email: "grace@example.COM", roles: ["ROLE_USER"] } });
    expect(dup.response.status).toBe(409);
    const missing = await ts.admin.GET("/api/v1/users/{user_id}", { params: { path: { user_id: "0000000000000000" } } });
    expect(missing.response.status).toBe(404);
    expect(reasonOf(missing.error as Record<string, any>)).toBe("USER_NOT_FOUND");
  });

  it("refuses unknown roles and unknown fields with 400, and stores nothing", async () => {
    const before = unwrap(await ts.admin.GET("/api/v1/users", { params: { query: { page_size: 100 } } })).list.length;
    // Role is an open enum in the types (clients accept new values); the server refuses unknown ones.
    const badRole = await ts.admin.POST("/api/v1/users", { body: { displayName: "X", email: "x1@example.com", roles: ["ROLE_GOD"] } });
    expect(badRole.response.status).toBe(400);
    const extra = await ts.admin.POST("/api/v1/users", { body: { displayName: "X", email: "x2@example.com", roles: ["ROLE_USER"], admin: true } });
    expect(extra.response.status).toBe(400);
    const unspecified = await ts.admin.POST("/api/v1/users", { body: { displayName: "X", email: "x3@example.com", roles: ["ROLE_UNSPECIFIED"] } });
    expect(unspecified.response.status).toBe(400);
    expect(unwrap(await ts.admin.GET("/api/v1/users", { params: { query: { page_size: 100 } } })).list.length).toBe(before);
  });

  it("shows a credential's secret once, at creation; lists never carry it", async () => {
    const { user } = unwrap(await ts.admin.POST("/api/v1/users", { body: { displayName: "Katherine Johnson", email: "kj@example.com", roles: ["ROLE_USER"] } }));
    const created = unwrap(await ts.admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: user.id! } }, body: { displayName: "laptop" } }));
    expect(created.clientSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const listed = unwrap(await ts.admin.GET("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: user.id! } } }));
    expect(listed.list.map((c) => c.credential.id)).toEqual([created.credential.id]);
    expect(JSON.stringify(listed)).not.toContain(created.clientSecret);
    const none = await ts.admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: "0000000000000000" } }, body: {} });
    expect(none.response.status).toBe(404);
  });
});
