// Where a request body is free-form data rather than text fields, as read from the contract: only
// the values the contract takes as any JSON value (a sample payload; the intake's whole body, which
// it checks itself). A new free-form place fails this test until it is meant.
import { describe, expect, it } from "vitest";
import { DATA, FIELDS } from "../../../src/core/storable-value.js";
import { RequestShapes } from "../../../src/http/request-shapes.js";
import { contractPath, operations } from "../../support/contract.js";

const shapes = RequestShapes.of(contractPath);
const CHECK = "svc.api.automations.v1.AutomationService.CheckAutomationSteps";
/** The intake's operations, one per kind of sender: each takes the sender's whole body as it is. */
const INTAKES = operations.filter((op) => op.op["x-raw-request"] === true).map((op) => op.operationId);

describe("the text places of request bodies", () => {
  it("every body is text fields but a sample payload and the webhook bodies", () => {
    expect(INTAKES.length).toBe(4);
    const free = operations.filter((op) => ![CHECK, ...INTAKES].includes(op.operationId));
    for (const op of free) expect(shapes.operation(op.operationId)?.body?.text ?? FIELDS, op.operationId).toBe(FIELDS);
    for (const intake of INTAKES) expect(shapes.operation(intake)?.body?.text, intake).toBe(DATA);
  });

  it("in CheckAutomationSteps, the sample payload and all below it is data; the steps are text fields", () => {
    const body = shapes.operation(CHECK)!.body!.text;
    expect(body.data).toBe(false);
    expect(body.at("samplePayload")).toBe(DATA);
    expect(body.at("samplePayload").at("x").at("0")).toBe(DATA);
    expect(body.at("automationSteps")).toBe(FIELDS);
    expect(body.at("zz")).toBe(FIELDS);
  });
});
