// Error examples of the contract whose exact wording came from a fuzzer's value: each provoked here
// on purpose, so the documented-errors check never depends on what the fuzzer happens to generate.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contract } from "../../support/contract.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { expectError } from "../limits/helpers.js";
import { automationsApi, createHooked } from "../webhooks/helpers.js";

let ts: TestServer;
beforeAll(async () => void (ts = await startTestServer()));
afterAll(async () => ts?.stop());

const messageOf = (answer: { error?: unknown }) => (answer.error as { message: string }).message;

describe("documented examples provoked as written", () => {
  it("UserService.Create: roles that are not an array", async () => {
    const answer = await ts.admin.POST("/api/v1/users", { body: { displayName: "A", email: "a@example.com", roles: "ROLE_USER" } as never });
    expectError(answer, 400, "INVALID_ARGUMENT");
    expect(messageOf(answer)).toBe("body.roles: must be array");
  });

  it("CredentialService.Revoke: a user id longer than 128 characters", async () => {
    const answer = await ts.admin.POST("/api/v1/users/{user_id}/credentials/{credential_id}/revoke", {
      params: { path: { user_id: "u".repeat(129), credential_id: "Cr8dT5vB2nM4kP6q" } },
      body: {},
    });
    expectError(answer, 400, "INVALID_ARGUMENT");
    expect(messageOf(answer)).toBe("params.user_id: must NOT have more than 128 characters");
  });

  it("UpdateAutomation: a CEL expression cut short, and a range with host bits set", async () => {
    const hook = await createHooked(ts);
    const api = automationsApi(ts.admin);
    const cel = await api.update(hook.id, { displayName: "x", automationSteps: [{ stepName: "a", skipIfTrueCel: "!", evaluateExpressions: { expressions: [{ name: "x", expression: "1" }] } }] }, "automationSteps");
    expectError(cel, 400, "CEL_INVALID");
    expect(messageOf(cel)).toBe("automation.automationSteps[0].skipIfTrueCel: syntax error: Unexpected token: EOF (at position 1)");
    const cidr = await api.update(hook.id, { displayName: "x", triggers: [{ webhook: { hmac: {}, allowedSourceCidrs: ["10.0.0.0/8", "147.232.239.235/31"] } }] }, "triggers");
    expectError(cidr, 400, "INVALID_CIDR");
    expect(messageOf(cidr)).toBe("automation.triggers[0].webhook.allowedSourceCidrs[1]: has host bits set; the range is 147.232.239.234/31");
  });

  it("the list operations' invalidPageToken: a page token that is not one of theirs, answered as the shared example", async () => {
    const hook = await createHooked(ts);
    const documented = withoutRequestId(contract.components.examples.InvalidPageToken.value);
    const query = { params: { query: { page_token: "not-a-page-token" } } };
    const answers = [
      await ts.admin.GET("/api/v1/users", query),
      await ts.admin.GET("/api/v1/automations", query),
      await ts.admin.GET("/api/v1/funds/app-caps", query),
      await ts.admin.GET("/api/v1/automation_executions", query),
      await ts.admin.GET("/api/v1/automations/{id}/webhook-events", { params: { path: { id: hook.id }, query: query.params.query } }),
    ];
    for (const answer of answers) {
      expectError(answer, 400, "INVALID_PAGE_TOKEN");
      expect(withoutRequestId(answer.error)).toEqual(documented);
    }
  });
});

/** A Status body without its RequestInfo's id, which differs per request. */
function withoutRequestId(status: unknown): Record<string, unknown> {
  const body = status as { details: Record<string, unknown>[] };
  return { ...body, details: body.details.map((d) => (d["@type"] === "type.googleapis.com/google.rpc.RequestInfo" ? { "@type": d["@type"] } : d)) };
}
