// src/http/contract-validation.ts runs express-openapi-validator's checks in one step, with a fast
// path that calls the validator's own compiled validators. Every request here is sent twice, to an
// app on the validator's own chain and to an app on ours, each twice (the first request of an
// operation compiles, later ones take the fast path): the answers must be the same, refusals word
// for word. The fast path must be taken where it can be, and a contract it cannot run must not load.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import express, { type ErrorRequestHandler, type RequestHandler } from "express";
import * as OpenApiValidator from "express-openapi-validator";
import { RequestValidator } from "express-openapi-validator/dist/middlewares/openapi.request.validator.js";
import { ResponseValidator } from "express-openapi-validator/dist/middlewares/openapi.response.validator.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parse } from "yaml";
import { ApiError, GrpcCode } from "../../../src/core/errors.js";
import { contractPath } from "../../../src/core/package-root.js";
import { contractValidation, type ContractValidationOptions } from "../../../src/http/contract-validation.js";
import { statusBody } from "../../../src/http/status-body.js";
import { BOOTSTRAP, startTestServer } from "../../support/server.js";

const OPTIONS = {
  validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false },
  validateResponses: false,
  validateSecurity: false,
  validateFormats: true,
  validateApiSpec: false,
} as const;

// Express gives each layer its own req.params: the answer shows the body as validated.
const answer: RequestHandler = (req, res) => void res.json({ body: req.body ?? null });
const refusal: ErrorRequestHandler = (err: { status?: number; message?: string; errors?: unknown }, _req, res, _next) =>
  void res.status(err.status ?? 500).json({ message: err.message, errors: err.errors ?? null });

async function serve(validation: RequestHandler[], handler: RequestHandler = answer): Promise<{ url: string; close: () => Promise<void> }> {
  const app = express();
  app.use(express.json());
  app.use(validation);
  app.use(handler);
  app.use(refusal);
  const server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

interface Sent {
  method: string;
  path: string;
  body?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

async function send(base: string, r: Sent): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = { ...(r.headers ?? {}), ...(r.contentType ? { "content-type": r.contentType } : {}) };
  const res = await fetch(base + r.path, { method: r.method, headers, ...(r.body !== undefined ? { body: r.body } : {}) });
  return { status: res.status, body: await res.json() };
}

const LIMIT = "/api/v1/funds/subject-app-limits/u-1/app-1";
const AUTHORIZE = "/api/v1/funds/spend-authorizations";
const json = "application/json";
const authorize = (body: unknown, headers: Record<string, string> = { "idempotency-key": "k-1" }): Sent => ({ method: "POST", path: AUTHORIZE, body: JSON.stringify(body), contentType: json, headers });
const usd = (units: string) => ({ currencyCode: "USD", units, nanos: 0 });

const REQUESTS: Record<string, Sent> = {
  "a read with path parameters": { method: "GET", path: LIMIT },
  "a read with encoded path parameters": { method: "GET", path: "/api/v1/funds/subject-app-limits/u%202/app%2F1" },
  "a read with a query": { method: "GET", path: `${AUTHORIZE}?page_size=5` },
  "an unknown query parameter": { method: "GET", path: `${AUTHORIZE}?colour=red` },
  "an empty query parameter": { method: "GET", path: `${AUTHORIZE}?page_token=` },
  "a valid body": authorize({ userId: "u-1", appId: "app-1", amount: usd("1") }),
  "a body with a charset": { ...authorize({ userId: "u-1", appId: "app-1", amount: usd("1") }), contentType: "application/json; charset=utf-8" },
  "a body with another parameter": { ...authorize({ userId: "u-1", appId: "app-1", amount: usd("1") }), contentType: "Application/JSON; v=1" },
  "a refused body with another parameter": { ...authorize({ userId: "u-1", amount: usd("1") }), contentType: "application/json; v=2" },
  "a read sent a Content-Type": { method: "GET", path: LIMIT, contentType: "text/plain; v=3" },
  "a missing member": authorize({ userId: "u-1", amount: usd("1") }),
  "a member of the wrong type": authorize({ userId: 5, appId: "app-1", amount: usd("1") }),
  "an unknown member": authorize({ userId: "u-1", appId: "app-1", amount: usd("1"), colour: "red" }),
  "a bad Money": authorize({ userId: "u-1", appId: "app-1", amount: { currencyCode: "USD", units: 1 } }),
  "a missing required header": authorize({ userId: "u-1", appId: "app-1", amount: usd("1") }, {}),
  "an unsupported media type": { method: "POST", path: AUTHORIZE, body: "userId=u-1", contentType: "text/plain", headers: { "idempotency-key": "k-1" } },
  "no such route": { method: "GET", path: "/api/v1/funds/nothing-here" },
  "a method the path does not take": { method: "DELETE", path: AUTHORIZE },
};

describe("contract validation in one step, with the validator's compiled validators on the fast path", () => {
  let theirs: Awaited<ReturnType<typeof serve>>;
  let ours: Awaited<ReturnType<typeof serve>>;
  const validations = vi.spyOn(RequestValidator.prototype, "validate");

  beforeAll(async () => {
    theirs = await serve(OpenApiValidator.middleware({ apiSpec: contractPath, ...OPTIONS }) as RequestHandler[]);
    ours = await serve([contractValidation({ apiSpec: contractPath, ...OPTIONS })]);
  });
  afterAll(async () => {
    await theirs.close();
    await ours.close();
    validations.mockRestore();
  });

  it.each(Object.entries(REQUESTS))("answers %s as the validator's own chain does, the first time and the next", async (_name, request) => {
    const expected = await send(theirs.url, request);
    expect(await send(ours.url, request)).toEqual(expected);
    expect(await send(ours.url, request)).toEqual(expected);
  });

  it("refuses some of these and lets the others through, so that the comparison above compares both", async () => {
    const statuses = await Promise.all(Object.values(REQUESTS).map(async (r) => (await send(ours.url, r)).status));
    expect(new Set(statuses)).toEqual(new Set([200, 400, 404, 405, 415]));
  });

  it("passes a request the validator passed before for its operation and Content-Type without calling the validator again", async () => {
    const path = "/api/v1/funds/subject-app-limits/u-9/app-9/effective";
    await send(ours.url, { method: "GET", path });
    validations.mockClear();
    const second = await send(ours.url, { method: "GET", path: "/api/v1/funds/subject-app-limits/u-8/app-8/effective" });
    expect(second).toEqual({ status: 200, body: { body: null } });
    expect(validations).not.toHaveBeenCalled();
    // A refusal and a query string go the validator's way.
    await send(ours.url, REQUESTS["a missing member"]!);
    await send(ours.url, { method: "GET", path: `${path}?x=1` });
    expect(validations).toHaveBeenCalledTimes(2);
  });

  it("compiles per operation and media type, not per spelling of the Content-Type header", async () => {
    const builds = vi.spyOn(RequestValidator.prototype as unknown as { buildMiddleware: () => unknown }, "buildMiddleware");
    try {
      const spellings = Array.from({ length: 20 }, (_, i) => `application/json; spelling=${i}`);
      for (const contentType of spellings) {
        expect((await send(ours.url, { ...REQUESTS["a missing member"]!, contentType })).status).toBe(400);
        expect((await send(ours.url, { ...REQUESTS["a read with path parameters"]!, path: `${LIMIT}/effective`, contentType })).status).toBe(200);
      }
      // One build for each of the two operations, whatever the spelling; theirs builds one per spelling.
      expect(builds.mock.calls.length).toBeLessThanOrEqual(2);
      builds.mockClear();
      for (const contentType of spellings.slice(0, 3)) await send(theirs.url, { ...REQUESTS["a missing member"]!, contentType });
      expect(builds).toHaveBeenCalledTimes(3);
    } finally {
      builds.mockRestore();
    }
  });

  it("through the server, responses validated: new spellings of the Content-Type compile neither request nor response validators", async () => {
    const ts = await startTestServer();
    const requestBuilds = vi.spyOn(RequestValidator.prototype as unknown as { buildMiddleware: () => unknown }, "buildMiddleware");
    const responseBuilds = vi.spyOn(ResponseValidator.prototype as unknown as { buildValidators: () => unknown }, "buildValidators");
    try {
      const form = new URLSearchParams({ grant_type: "client_credentials", client_id: BOOTSTRAP.clientId, client_secret: BOOTSTRAP.clientSecret });
      const { access_token: token } = (await (await fetch(`${ts.url}/auth/v1/token`, { method: "POST", body: form })).json()) as { access_token: string };
      const get = (contentType: string) => fetch(`${ts.url}/api/v1/funds/policy`, { headers: { authorization: `Bearer ${token}`, "content-type": contentType } });
      expect((await get("application/json")).status).toBe(200);
      requestBuilds.mockClear();
      responseBuilds.mockClear();
      for (let i = 0; i < 20; i++) expect((await get(`text/plain; spelling=${i}`)).status).toBe(200);
      expect(requestBuilds).not.toHaveBeenCalled();
      expect(responseBuilds).not.toHaveBeenCalled();
    } finally {
      requestBuilds.mockRestore();
      responseBuilds.mockRestore();
      await ts.stop();
    }
  });

  it("does not load a contract with a multipart body, whose step it does not run", async () => {
    const dir = mkdtempSync(join(tmpdir(), "contract-validation-"));
    const spec = join(dir, "multipart.yaml");
    writeFileSync(
      spec,
      JSON.stringify({
        openapi: "3.1.0",
        info: { title: "t", version: "1" },
        paths: { "/upload": { post: { operationId: "upload", requestBody: { content: { "multipart/form-data": { schema: { type: "object" } } } }, responses: { "200": { description: "ok" } } } } },
      }),
    );
    const app = await serve([contractValidation({ apiSpec: spec, ...OPTIONS } as ContractValidationOptions)]);
    try {
      expect(await send(app.url, { method: "POST", path: "/upload", body: "{}", contentType: json })).toEqual({ status: 500, body: { message: expect.stringMatching(/multipart/), errors: null } });
    } finally {
      await app.close();
    }
  });
});

// Answers: every answer is checked by the validator's response validation, ours on a fast path. The
// app answers what the request's X-Answer header says (a status and a body), so that the same answer
// can be put through both, valid and not, the first time (ours builds) and the next (ours is fast).
describe("response validation with the validator's compiled validators on the fast path", () => {
  const POLICY = "/api/v1/funds/policy";
  const contract = parse(readFileSync(contractPath, "utf8")) as {
    paths: Record<string, { get: { responses: Record<string, { content: Record<string, { example: { fundPolicy: Record<string, unknown> } }> }> } }>;
  };
  const policy = contract.paths[POLICY]!.get.responses["200"]!.content[json]!.example;
  const refused = statusBody(new ApiError(400, GrpcCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", "refused"), "r-1");
  const ANSWERS: Record<string, { status: number; body: unknown }> = {
    "a valid answer": { status: 200, body: policy },
    "a member of the wrong type": { status: 200, body: { fundPolicy: { ...policy.fundPolicy, currencyCode: 5 } } },
    "a missing member": { status: 200, body: { fundPolicy: { ...policy.fundPolicy, currencyCode: undefined } } },
    "an unknown member": { status: 200, body: { ...policy, colour: "red" } },
    "a null body": { status: 200, body: null },
    "a declared error": { status: 400, body: refused },
    "a declared error with a bad body": { status: 400, body: { code: "three" } },
    "an undeclared status": { status: 418, body: refused },
    "a 5xx, not checked": { status: 502, body: { anything: true } },
  };
  const answering: RequestHandler = (req, res) => {
    const { status: code, body } = JSON.parse(String(req.get("x-answer"))) as { status: number; body: unknown };
    res.status(code).json(body);
  };
  const options = { apiSpec: contractPath, ...OPTIONS, validateResponses: { allErrors: true } };
  const ask = async (base: string, answer: unknown) => {
    const res = await fetch(base + POLICY, { headers: { "x-answer": JSON.stringify(answer) } });
    return { status: res.status, body: await res.text() };
  };
  let theirs: Awaited<ReturnType<typeof serve>>;
  let ours: Awaited<ReturnType<typeof serve>>;

  beforeAll(async () => {
    theirs = await serve(OpenApiValidator.middleware(options) as RequestHandler[], answering);
    ours = await serve([contractValidation(options)], answering);
  });
  afterAll(async () => {
    await theirs.close();
    await ours.close();
  });

  it.each(Object.entries(ANSWERS))("sends or refuses %s as the validator's own chain does, the first time and the next", async (_name, answer) => {
    const expected = await ask(theirs.url, answer);
    expect(await ask(ours.url, answer)).toEqual(expected);
    expect(await ask(ours.url, answer)).toEqual(expected);
  });

  it("refuses some of these and sends the others, so that the comparison above compares both", async () => {
    const statuses = await Promise.all(Object.values(ANSWERS).map(async (a) => (await ask(ours.url, a)).status));
    expect(new Set(statuses)).toEqual(new Set([200, 400, 500, 502]));
  });

  it("checks a valid answer without the validator's own step once the operation's validators are built", async () => {
    const validations = vi.spyOn(ResponseValidator.prototype as unknown as { _validate: () => unknown }, "_validate");
    try {
      await ask(ours.url, ANSWERS["a valid answer"]);
      validations.mockClear();
      await ask(ours.url, ANSWERS["a valid answer"]);
      await ask(ours.url, ANSWERS["a declared error"]);
      expect(validations).not.toHaveBeenCalled();
      // An answer the fast path does not pass is the validator's to refuse.
      expect((await ask(ours.url, ANSWERS["a member of the wrong type"])).status).toBe(500);
      expect(validations).toHaveBeenCalledTimes(1);
    } finally {
      validations.mockRestore();
    }
  });

  it("sends every answer the validator's way when a serializer of the caller's may change what it checks", async () => {
    const serializing = await serve([contractValidation({ ...options, serDes: [{ format: "date-time", serialize: (d: Date) => d.toISOString() }] } as ContractValidationOptions)], answering);
    const validations = vi.spyOn(ResponseValidator.prototype as unknown as { _validate: () => unknown }, "_validate");
    try {
      for (let i = 0; i < 3; i++) expect((await ask(serializing.url, ANSWERS["a valid answer"])).status).toBe(200);
      expect(validations).toHaveBeenCalledTimes(3);
    } finally {
      validations.mockRestore();
      await serializing.close();
    }
  });
});
