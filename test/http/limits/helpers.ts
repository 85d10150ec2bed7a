// Shared by the funds HTTP tests: request shorthands over the typed client (every answer is checked
// against the contract by the test harness) and assertions on the contract's error body.
import { expect } from "vitest";
import { unwrap, type ApiClient, type components } from "../../../src/client/index.js";
import { startTestServer, type TestServer } from "../../support/server.js";

export type Schemas = components["schemas"];

let counter = 0;
/** A fresh app id, so tests sharing a server never touch each other's rows. */
export const newAppId = (prefix = "app") => `${prefix}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;

export const money = (units: string, nanos = 0, currencyCode = "USD") => ({ currencyCode, units, nanos });

/** An instant, as the API writes timestamps. */
export const iso = (ms: number): string => new Date(ms).toISOString();
// Limits as answers show them (the unset arms null); requests send them so too, as a client
// sending back what it read does.
export const amount = (units: string, nanos = 0, currencyCode = "USD") => ({ amount: { money: money(units, nanos, currencyCode) }, blocked: null, unlimited: null });
export const BLOCKED = { amount: null, blocked: {}, unlimited: null };
export const UNLIMITED = { amount: null, blocked: null, unlimited: {} };

interface ControlsShorthand {
  limit?: unknown;
  period?: string;
  extension?: { limit?: unknown; expiresAt?: string; reason?: string };
  suspension?: { reason?: string; suspendedAt?: string };
  perAuthorization?: unknown;
  maxAuthorizations?: number;
}

/** Controls as answers show them: every field present, null (or "" for a reason, UNSPECIFIED for a period) when unset. */
export const shown = (c: ControlsShorthand) => ({
  limit: c.limit ?? null,
  period: c.period ?? "PERIOD_KIND_UNSPECIFIED",
  extension: c.extension ? { limit: c.extension.limit ?? null, expiresAt: c.extension.expiresAt ?? null, reason: c.extension.reason ?? "" } : null,
  suspension: c.suspension ? { reason: c.suspension.reason ?? "", suspendedAt: c.suspension.suspendedAt ?? null } : null,
  perAuthorization: c.perAuthorization ?? null,
  maxAuthorizations: c.maxAuthorizations ?? null,
});

export interface Answer {
  data?: unknown;
  error?: unknown;
  response: Response;
}

/** The `ErrorInfo.reason` of an error body. */
export function reasonOf(body: unknown): string | undefined {
  const details = (body as { details?: { "@type": string; reason?: string }[] } | undefined)?.details ?? [];
  return details.find((d) => d["@type"] === "type.googleapis.com/google.rpc.ErrorInfo")?.reason;
}

/**
 * Asserts a failure with the contract's error body: this status, a gRPC code, a message, an ErrorInfo
 * (with `reason` when given) and a RequestInfo carrying the response's request id.
 */
export function expectError(answer: Answer, status: number, reason?: string): void {
  const body = answer.error as Schemas["Status"] | undefined;
  expect(answer.response.status, JSON.stringify(body)).toBe(status);
  expect(body).toMatchObject({ code: expect.any(Number), message: expect.any(String) });
  const types = body!.details.map((d) => d["@type"]);
  expect(types).toContain("type.googleapis.com/google.rpc.ErrorInfo");
  expect(types).toContain("type.googleapis.com/google.rpc.RequestInfo");
  const info = body!.details.find((d) => d["@type"] === "type.googleapis.com/google.rpc.RequestInfo") as Schemas["RequestInfo"];
  expect(info.requestId).toBe(answer.response.headers.get("x-request-id"));
  expect(reasonOf(body)).toMatch(/^[A-Z][A-Z0-9_]*$/);
  if (reason !== undefined) expect(reasonOf(body)).toBe(reason);
}

/** Calls of every funds operation, by name, for one client. Bodies are `unknown` so tests can send bad ones. */
export function funds(client: ApiClient) {
  const row = (user_id: string, app_id: string) => ({ params: { path: { user_id, app_id } } });
  const app = (app_id: string) => ({ params: { path: { app_id } } });
  return {
    get: (u: string, a: string) => client.GET("/api/v1/funds/subject-app-limits/{user_id}/{app_id}", row(u, a)),
    setLimit: (u: string, a: string, body: unknown) => client.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", { ...row(u, a), body: body as never }),
    suspend: (u: string, a: string, body: unknown = {}) => client.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/suspension", { ...row(u, a), body: body as never }),
    unsuspend: (u: string, a: string) => client.DELETE("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/suspension", row(u, a)),
    setExtension: (u: string, a: string, body: unknown) => client.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/extension", { ...row(u, a), body: body as never }),
    clearExtension: (u: string, a: string) => client.DELETE("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/extension", row(u, a)),
    delete: (u: string, a: string) => client.DELETE("/api/v1/funds/subject-app-limits/{user_id}/{app_id}", row(u, a)),
    effective: (u: string, a: string) => client.GET("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/effective", row(u, a)),
    search: (body: unknown) => client.POST("/api/v1/funds/subject-app-limits/search", { body: body as never }),

    myList: (query: { page_size?: number; page_token?: string } = {}) => client.GET("/api/v1/funds/my/app-limits", { params: { query } }),
    myGet: (a: string) => client.GET("/api/v1/funds/my/app-limits/{app_id}", app(a)),
    mySetLimit: (a: string, body: unknown) => client.POST("/api/v1/funds/my/app-limits/{app_id}/limit", { ...app(a), body: body as never }),
    myClearLimit: (a: string) => client.DELETE("/api/v1/funds/my/app-limits/{app_id}/limit", app(a)),
    myEffective: (a: string) => client.GET("/api/v1/funds/my/app-limits/{app_id}/effective", app(a)),

    capList: (query: { page_size?: number; page_token?: string } = {}) => client.GET("/api/v1/funds/app-caps", { params: { query } }),
    capGet: (a: string) => client.GET("/api/v1/funds/app-caps/{app_id}", app(a)),
    capSet: (a: string, body: unknown) => client.POST("/api/v1/funds/app-caps/{app_id}", { ...app(a), body: body as never }),
    capDelete: (a: string) => client.DELETE("/api/v1/funds/app-caps/{app_id}", app(a)),

    policyGet: () => client.GET("/api/v1/funds/policy"),
    policyUpdate: (body: unknown) => client.POST("/api/v1/funds/policy", { body: body as never }),
  };
}

export type Funds = ReturnType<typeof funds>;

export interface FundsServer {
  ts: TestServer;
  admin: Funds;
  /** A ROLE_USER: the subject of the admin's calls, and the caller of its own MyFundLimits calls. */
  subject: { userId: string; f: Funds };
}

/** A test server with the admin's funds calls and a subject's, for the files that test funds through HTTP. */
export async function startFundsServer(env: Record<string, string> = {}): Promise<FundsServer> {
  const ts = await startTestServer(env);
  const user = await ts.userClient(["ROLE_USER"]);
  return { ts, admin: funds(ts.admin), subject: { userId: user.userId, f: funds(user.client) } };
}

/** The row's controls as stored, or null when the row does not exist (404 ROW_NOT_FOUND). */
export async function storedControls(f: Funds, userId: string, appId: string): Promise<Schemas["SpendControls"] | null> {
  const r = await f.get(userId, appId);
  if (r.response.status === 404) {
    expect(reasonOf(r.error)).toBe("ROW_NOT_FOUND");
    return null;
  }
  return unwrap(r).limit.controls;
}

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
