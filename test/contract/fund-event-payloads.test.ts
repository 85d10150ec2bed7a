// Every kind of fund event has its payload declared: each FUND_EVENT_TYPE_* the contract's
// enumeration names or the server's code spells is mapped by FundEventPayload to the one schema
// whose `type` admits it, so a kind added to the code without its shape in the contract fails here.
// (What the server sends is checked against these shapes wherever a test sees an event: the
// fund-event tests' `eventOf`, and the notifications of test/http/automations/notify.test.ts.)
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { FundEventTypeValues } from "../../generated/enums.js";
import { contract, deref } from "../support/contract.js";

const src = fileURLToPath(new URL("../../src", import.meta.url));
const UNSPECIFIED = "FUND_EVENT_TYPE_UNSPECIFIED";

/** Every FUND_EVENT_TYPE_* literal of src/. */
const spelledInCode = readdirSync(src, { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(".ts"))
  .flatMap((file) => [...readFileSync(join(src, file), "utf8").matchAll(/\bFUND_EVENT_TYPE_[A-Z_]+\b/g)].map((m) => m[0]));

const payload = contract.components.schemas.FundEventPayload as { oneOf: { $ref: string }[]; discriminator: { propertyName: string; mapping: Record<string, string> } };
/** The kinds a payload schema's `type` admits (its allOf's own part narrows FundEvent's). */
const kindsOf = (ref: string): string[] => (deref({ $ref: ref }).allOf as Record<string, any>[]).flatMap((part) => deref(part).properties?.type?.enum ?? []);

describe("fund-event payloads", () => {
  it("the code spells fund-event kinds (the scan finds them)", () => {
    expect(new Set(spelledInCode).size).toBeGreaterThan(5);
  });

  it("each kind of the enumeration and of the code is mapped to a payload schema whose type admits it, and only those", () => {
    const kinds = [...new Set([...FundEventTypeValues, ...spelledInCode])].filter((k) => k !== UNSPECIFIED).sort();
    const { mapping } = payload.discriminator;
    expect(kinds.filter((k) => !mapping[k]).map((k) => `${k}: no payload declared in FundEventPayload`)).toEqual([]);
    expect(kinds.filter((k) => mapping[k] && !kindsOf(mapping[k]).includes(k)).map((k) => `${k}: ${mapping[k]} does not admit it`)).toEqual([]);
    expect(Object.keys(mapping).sort()).toEqual(kinds);
    // The schemas of the oneOf are those the mapping names, and no kind is admitted by two of them.
    expect(payload.oneOf.map((s) => s.$ref).sort()).toEqual([...new Set(Object.values(mapping))].sort());
    const admitted = payload.oneOf.flatMap((s) => kindsOf(s.$ref));
    expect(admitted.sort()).toEqual(kinds);
  });

  it("the notify step's fund-event request sends these payloads", () => {
    expect(contract.webhooks.fundEventNotification.post.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/FundEventPayload" });
  });
});
