// The contract is what partners read (Redoc page, mock, typed client): it states the API's
// behaviour and each operation's stability, with no drafting notes about where a rule came from.
import { describe, expect, it } from "vitest";
import { contract, operations } from "../support/contract.js";

const STABILITY = ["stable", "beta"];
const DRAFTING_NOTE = /source interface|designed here|not shown/i;
const BETA_NOTE = "**Beta.** This operation may still change incompatibly in a minor release";

/** Every string of the document with its JSON path, for messages that point at the text. */
function* strings(node: unknown, path: string): Generator<[string, string]> {
  if (typeof node === "string") yield [path, node];
  else if (Array.isArray(node)) for (const [i, item] of node.entries()) yield* strings(item, `${path}[${i}]`);
  else if (node && typeof node === "object") for (const [key, value] of Object.entries(node)) yield* strings(value, `${path}.${key}`);
}

/** `Service.Method` of an operation id `svc.api.<area>.v1.Service.Method`. */
const shortName = (operationId: string): string => operationId.split(".").slice(-2).join(".");

describe("public docs", () => {
  it("every operation states its stability, and a beta operation says so first in its description", () => {
    for (const o of operations) {
      const stability = o.op["x-stability"];
      expect(STABILITY, `${o.operationId} x-stability`).toContain(stability);
      const description = o.op.description as string;
      expect(description.startsWith(BETA_NOTE), `${o.operationId} description opens with the beta note`).toBe(stability === "beta");
    }
  });

  it("the Compatibility section of the API description names exactly the stable operations", () => {
    const root = contract.info.description as string;
    expect(root).toContain("## Compatibility");
    // The section alone: others (Code samples) name operations of either stability.
    const section = root.slice(root.indexOf("## Compatibility")).split(/^## /m)[1]!;
    for (const o of operations) {
      const named = section.includes(`\`${shortName(o.operationId)}\``);
      expect(named, `${o.operationId} (${o.op["x-stability"]}) named in the API description`).toBe(o.op["x-stability"] === "stable");
    }
  });

  it("no text of the bundled contract carries a drafting note", () => {
    const notes = [...strings(contract, "$")].filter(([, text]) => DRAFTING_NOTE.test(text)).map(([path]) => path);
    expect(notes).toEqual([]);
  });
});
