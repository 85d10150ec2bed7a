// The console's words for the API's names: every operation the contract audits has words (a new
// audited operation fails here until it does), and request field paths read as the console labels them.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { fieldWords, messageWords, OPERATION_WORDS, operationWords } from "../../console/src/words.js";

const contract = parse(readFileSync(new URL("../../generated/openapi.yaml", import.meta.url), "utf8")) as { paths: Record<string, Record<string, { operationId?: string; "x-audit"?: { target?: string } }>> };
const audited = Object.values(contract.paths)
  .flatMap((item) => Object.values(item))
  .filter((op) => typeof op === "object" && op?.["x-audit"]?.target)
  .map((op) => op.operationId ?? "");

describe("operations in words", () => {
  it("every audited operation of the contract has words, and no words name an operation the contract does not audit", () => {
    expect(audited.length).toBeGreaterThan(20);
    expect(audited.filter((id) => !(id in OPERATION_WORDS))).toEqual([]);
    expect(Object.keys(OPERATION_WORDS).filter((id) => !audited.includes(id))).toEqual([]);
  });

  it("says an operation in words; one it does not know by its service and method", () => {
    expect(operationWords("svc.api.funds.v1.SubjectAppLimitService.SetLimit")).toBe("Limit set");
    expect(operationWords("svc.api.other.v1.ThingService.Frob")).toBe("ThingService.Frob");
  });
});

describe("field paths in words", () => {
  it.each([
    ["automationSteps[0].evaluateExpressions.expressions[0].expression", "Step 1 (Evaluate expressions), expression 1"],
    ["automationSteps[2].evaluateExpressions.expressions[1].name", "Step 3 (Evaluate expressions), expression 2, name"],
    ["automationSteps[1].skipIfTrueCel", "Step 2, skip if true"],
    ["automationSteps[1].stepName", "Step 2, step name"],
    ["automationSteps[0].setAppLimitExtension.expiresAtCel", "Step 1 (Set an app limit extension), expires at"],
    ["automationSteps[3].notify.bodyCel", "Step 4 (Send a notification), body"],
    ["triggers[0].fundEvents.conditionCel", "Trigger 1 (Fund events), condition"],
    ["body.triggers[0].webhook.jwt.jwksUrl", "Trigger 1 (Incoming webhook), jwt, JWKS URL"],
    ["body.automation.triggers.0.webhook.standardWebhooks.publicKey", "Trigger 1 (Incoming webhook), Standard Webhooks, public key"],
    ["body.webhookSecret", "Sender's secret"],
    ["body.automation.triggers.0.webhook.allowedSourceCidrs.0", "Trigger 1 (Incoming webhook), allowed source CIDRs 1"],
    ["limit.amount.money.nanos", "Limit, amount, money, nanos"],
  ])("%s reads %s", (path, words) => {
    expect(fieldWords(path)).toBe(words);
  });
});

describe("server messages about a field", () => {
  it("name the field in words instead of the path the message starts with", () => {
    const path = "automationSteps[0].evaluateExpressions.expressions[0].expression";
    expect(messageWords(path, `${path}: syntax error (at position 3)`)).toBe("Step 1 (Evaluate expressions), expression 1: syntax error (at position 3)");
    expect(messageWords("automationSteps[1].stepName", "must be unique")).toBe("Step 2, step name: must be unique");
    expect(messageWords("", "the steps are invalid")).toBe("the steps are invalid");
  });
});
