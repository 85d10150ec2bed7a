// The seed (shared/seed/000_fbc089625007ac92.txt) is the law of the interface: each item it states,
// section by section, is asserted here against the bundled contract that everything else reads.
import { describe, expect, it } from "vitest";
import { contract, operations } from "../support/contract.js";

type Node = Record<string, any>;

function deref(node: Node | undefined): Node {
  let n = node ?? {};
  while (n.$ref) n = (n.$ref as string).replace(/^#\//, "").split("/").reduce((acc: Node, p) => acc[p.replaceAll("~1", "/")], contract);
  return n;
}
const schema = (name: string): Node => {
  const s = contract.components.schemas[name];
  if (!s) throw new Error(`schema ${name} is not in the contract`);
  return deref(s);
};
/** The schemas a value of `node` may take: oneOf/anyOf arms flattened, null arms dropped. */
function arms(node: Node): Node[] {
  const n = deref(node);
  const alts = (n.oneOf ?? n.anyOf) as Node[] | undefined;
  if (!alts) return [n];
  return alts.flatMap((a) => arms(a)).filter((a) => a.type !== "null");
}
/** Property `field` of object schema `s`, looked up across oneOf arms. */
function prop(s: Node, field: string): Node | undefined {
  for (const arm of arms(s)) if (arm.properties?.[field]) return arm.properties[field] as Node;
  return undefined;
}
/** Whether a property schema admits JSON null. */
function nullable(p: Node): boolean {
  const n = deref(p);
  if (Array.isArray(n.type)) return n.type.includes("null");
  return ((n.oneOf ?? n.anyOf ?? []) as Node[]).some((a) => deref(a).type === "null");
}
/** The component schema name a property refers to (through a nullable oneOf too). */
function refName(p: Node): string | undefined {
  const direct = p.$ref as string | undefined;
  if (direct) return direct.split("/").pop();
  for (const alt of (p.oneOf ?? p.anyOf ?? []) as Node[]) if (alt.$ref) return (alt.$ref as string).split("/").pop();
  return undefined;
}
/** The operation, with the parameters of its path item merged into its own. */
const op = (method: string, path: string): Node => {
  const o = contract.paths[path]?.[method];
  if (!o) throw new Error(`${method.toUpperCase()} ${path} is not in the contract`);
  return { ...o, parameters: [...(contract.paths[path].parameters ?? []), ...(o.parameters ?? [])] } as Node;
};
/** Text with line breaks folded, as a reader sees it. */
const text = (s: string): string => s.replace(/\s+/g, " ");
const bodySchema = (o: Node): Node => deref(deref(o.requestBody).content["application/json"].schema);
const okSchema = (o: Node): Node => deref(deref(o.responses["200"]).content["application/json"].schema);
const everyText = text(JSON.stringify(contract).replaceAll("\\n", " "));

describe("seed 2: resources and their fields", () => {
  it("2.1 SubjectAppLimit has every field, with the seed's types", () => {
    const s = schema("SubjectAppLimit");
    for (const f of ["appId", "userId", "tenantId"]) expect(deref(s.properties[f]).type, f).toBe("string");
    expect(refName(s.properties.controls)).toBe("SpendControls");
    expect(nullable(s.properties.controls)).toBe(true);
    for (const f of ["createdAt", "updatedAt", "deletedAt"]) {
      expect(nullable(s.properties[f]), f).toBe(true);
      expect(deref(s.properties[f]).format, f).toBe("date-time");
    }
  });

  it("2.2 MyFundLimit carries appId, controls, createdAt, updatedAt and no user id", () => {
    const s = schema("MyFundLimit");
    expect(Object.keys(s.properties).sort()).toEqual(["appId", "controls", "createdAt", "updatedAt"]);
    expect(refName(s.properties.controls)).toBe("SpendControls");
  });

  it("2.3 SpendControls has limit, period, extension, suspension, and is not a oneof", () => {
    const s = schema("SpendControls");
    expect(s.oneOf).toBeUndefined();
    expect(refName(s.properties.limit)).toBe("SpendLimit");
    expect(refName(s.properties.period)).toBe("PeriodKind");
    expect(refName(s.properties.extension)).toBe("SpendExtension");
    expect(refName(s.properties.suspension)).toBe("SpendSuspension");
    for (const f of ["limit", "extension", "suspension"]) expect(nullable(s.properties[f]), f).toBe(true);
    expect(text(s.description)).toContain("A lapsed extension falls back to the row's own base limit, not to the next layer.");
    expect(text(s.description)).toContain("Unsuspending restores the limit that the suspension froze.");
  });

  it("2.3 PeriodKind has exactly the seed's values and is marked extensible", () => {
    const s = schema("PeriodKind");
    expect(s.enum).toEqual([
      "PERIOD_KIND_UNSPECIFIED",
      "PERIOD_KIND_DAILY",
      "PERIOD_KIND_WEEKLY",
      "PERIOD_KIND_MONTHLY",
      "PERIOD_KIND_QUARTERLY",
      "PERIOD_KIND_YEARLY",
    ]);
    expect(s["x-extensible-enum"]).toBe(true);
  });

  it("2.4 SpendLimit is a oneof of amount, blocked, unlimited; SpendLimitAmount has money", () => {
    const s = schema("SpendLimit");
    const required = (s.oneOf as Node[]).map((a) => deref(a).required).flat().sort();
    expect(required).toEqual(["amount", "blocked", "unlimited"]);
    expect(refName(prop(s, "amount")!)).toBe("SpendLimitAmount");
    expect(refName(schema("SpendLimitAmount").properties.money)).toBe("Money");
    expect(nullable(schema("SpendLimitAmount").properties.money)).toBe(true);
  });

  it("2.5 SpendExtension and 2.6 SpendSuspension", () => {
    const e = schema("SpendExtension");
    expect(refName(e.properties.limit)).toBe("SpendLimit");
    expect(deref(e.properties.expiresAt).format).toBe("date-time");
    expect(nullable(e.properties.expiresAt)).toBe(true);
    expect(deref(e.properties.reason).type).toBe("string");
    const s = schema("SpendSuspension");
    expect(deref(s.properties.reason).type).toBe("string");
    expect(deref(s.properties.suspendedAt).format).toBe("date-time");
  });

  it("2.7 Money: currencyCode, units as an int64 string, nanos int32 in [0, 1e9)", () => {
    const s = schema("Money");
    expect(deref(s.properties.currencyCode).type).toBe("string");
    const units = deref(s.properties.units);
    expect(units.type).toBe("string");
    expect(units.format).toBe("int64");
    expect(new RegExp(units.pattern).test("-1")).toBe(false);
    const nanos = deref(s.properties.nanos);
    expect([nanos.type, nanos.format, nanos.minimum, nanos.maximum]).toEqual(["integer", "int32", 0, 999_999_999]);
    expect(s.description).toContain("9223372036");
  });
});

describe("seed 4: endpoints", () => {
  it("4.1 Suspend: path, method, operation id, parameters, body and answer", () => {
    const o = op("post", "/api/v1/funds/subject-app-limits/{user_id}/{app_id}/suspension");
    expect(o.operationId).toBe("svc.api.funds.v1.SubjectAppLimitService.Suspend");
    const params = (o.parameters as Node[]).map(deref).map((p) => [p.name, p.in, p.required, p.schema.type]);
    expect(params).toEqual(
      expect.arrayContaining([
        ["user_id", "path", true, "string"],
        ["app_id", "path", true, "string"],
      ]),
    );
    const body = bodySchema(o);
    expect(Object.keys(body.properties)).toEqual(["reason"]);
    expect(body.required ?? []).toEqual([]);
    const ok = okSchema(o);
    expect(refName(ok.properties.limit)).toBe("SubjectAppLimit");
    expect(nullable(ok.properties.limit)).toBe(true);
  });

  it("4.2 SetLimit on the caller's own row: messages named as the seed names them", () => {
    const o = op("post", "/api/v1/funds/my/app-limits/{app_id}/limit");
    expect(o.operationId).toMatch(/^svc\.api\.funds\.v1\.MyFundLimitsService\.SetLimit$/);
    expect(deref(o.requestBody).content["application/json"].schema.$ref).toMatch(/\/MyFundLimitsServiceSetLimitRequest$/);
    expect(deref(o.responses["200"]).content["application/json"].schema.$ref).toMatch(/\/MyFundLimitsServiceSetLimitResponse$/);
    const body = bodySchema(o);
    expect(refName(body.properties.limit)).toBe("SpendLimit");
    expect(refName(body.properties.period)).toBe("PeriodKind");
    expect(refName(okSchema(o).properties.limit)).toBe("MyFundLimit");
  });

  it("4.3 the inbound webhook: headers, body limit, statuses", () => {
    const o = op("post", "/api/v1/webhooks/incoming/{listener_id}");
    const params = (o.parameters as Node[]).map(deref);
    expect(params.find((p) => p.name === "listener_id")?.in).toBe("path");
    for (const h of ["Webhook-Timestamp", "Webhook-Event-Id"]) expect(params.find((p) => p.name === h && p.in === "header")?.required, h).toBe(true);
    const schemes = contract.components.securitySchemes;
    expect(schemes.webhookHmac).toMatchObject({ type: "apiKey", in: "header", name: "Webhook-Signature" });
    expect(schemes.webhookJwt).toMatchObject({ type: "http", scheme: "bearer" });
    expect((o.security as Node[]).map((s) => Object.keys(s)[0]).sort()).toEqual(["webhookHmac", "webhookJwt"]);
    for (const status of ["200", "400", "401", "403", "404", "409", "413"]) expect(o.responses[status], status).toBeDefined();
    expect(deref(o.requestBody).content["application/json"]).toBeDefined();
    expect(text(JSON.stringify(o))).toMatch(/64 KB/);
    expect(text(JSON.stringify(o))).toContain("{timestamp}.{event_id}.{body}");
  });

  it("4.5 every list and search is paginated with page_size (default 25) and page_token", () => {
    const lists = operations.filter((o) => {
      const ok = deref(o.op.responses["200"]).content?.["application/json"]?.schema;
      return ok && deref(ok).properties?.nextPageToken;
    });
    expect(lists.length).toBeGreaterThanOrEqual(8);
    for (const l of lists) {
      l.op = op(l.method, l.path);
      const ok = okSchema(l.op);
      expect(ok.required, l.operationId).toEqual(expect.arrayContaining(["list", "nextPageToken"]));
      const item = deref(ok.properties.list.items);
      expect(Object.keys(item.properties), `${l.operationId} wraps each item`).toHaveLength(1);
      if (l.method === "get") {
        const params = (l.op.parameters as Node[]).map(deref);
        const size = params.find((p) => p.name === "page_size");
        expect(size?.schema.default, l.operationId).toBe(25);
        expect(params.some((p) => p.name === "page_token"), l.operationId).toBe(true);
      } else {
        const body = bodySchema(l.op);
        expect(Object.keys(body.properties), l.operationId).toEqual(expect.arrayContaining(["pageSize", "pageToken"]));
      }
    }
  });
});

describe("seed 5: authentication", () => {
  it("5.1 bearer tokens from client credentials at /auth/v1/token, no scopes", () => {
    const { oauth2, bearerAuth } = contract.components.securitySchemes;
    expect(oauth2.flows.clientCredentials.tokenUrl).toBe("/auth/v1/token");
    expect(oauth2.flows.clientCredentials.scopes).toEqual({});
    expect(bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
    const token = op("post", "/auth/v1/token");
    expect(Object.keys(deref(token.requestBody).content)).toEqual(["application/x-www-form-urlencoded"]);
    expect(token.security).toEqual([]);
  });

  it("5.2 HMAC and JWT rules are stated", () => {
    for (const claim of ["sub", "aud", "exp", "jti", "htm", "htb_s256"]) expect(text(contract.components.securitySchemes.webhookJwt.description)).toContain(`\`${claim}\``);
    for (const alg of ["RS256", "ES256", "EdDSA"]) expect(everyText).toContain(alg);
    expect(text(contract.components.securitySchemes.webhookHmac.description)).toContain("as UTF-8 bytes, not base64-decoded");
  });
});

describe("seed 7, 8 and 9: errors, limits, versioning", () => {
  it("every non-2xx answer of every operation is the one Status error body", () => {
    for (const o of operations) {
      for (const [status, response] of Object.entries(o.op.responses as Node)) {
        if (status.startsWith("2")) continue;
        const s = deref(deref(response).content["application/json"].schema);
        const props = s.properties ?? s.allOf?.map(deref).reduce((a: Node, b: Node) => ({ ...a, ...b.properties }), {});
        expect(Object.keys(props), `${o.operationId} ${status}`).toEqual(expect.arrayContaining(["code", "message", "details"]));
      }
    }
  });

  it("section 8 limits appear in the contract", () => {
    for (const text of ["10 to 100", "Default 25", "64 KB", "5 minutes", "10 minutes", "7 days", "256-bit"]) expect(everyText, text).toContain(text);
  });

  it("section 9: version 0.1.0-alpha, /api/v1/ paths and /auth/v1/ token, tenant base_url server", () => {
    expect(contract.info.version).toBe("0.1.0-alpha");
    for (const path of Object.keys(contract.paths)) expect(path).toMatch(/^\/(api|auth)\/v1\//);
    expect(contract.servers[0].url).toBe("{base_url}");
    expect(contract.servers[0].variables.base_url).toBeDefined();
  });

  it("operation ids follow svc.api.<area>.v1.<Service>.<Method>", () => {
    for (const o of operations) expect(o.operationId).toMatch(/^svc\.api\.[a-z]+\.v1\.[A-Z][A-Za-z]+Service\.[A-Z][A-Za-z]+$/);
  });
});
