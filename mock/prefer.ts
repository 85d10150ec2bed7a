// `Prefer: code=N` without `example=` answers the operation's first documented example of N. Prism
// alone would not: for an answer with named examples it puts the schema's own example first (the
// `Status` schema's INVALID_ARGUMENT, for every operation and every error). So the mock names the
// operation's first example to Prism, as if the caller had written `example=`.
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { contractPath } from "../src/core/package-root.js";

type Node = Record<string, any>;

const contract = parse(readFileSync(contractPath, "utf8")) as Node;

/** A node of the bundled contract with its local `$ref`s followed. */
function deref(node: Node | undefined): Node | undefined {
  let n = node;
  while (typeof n?.$ref === "string") n = (n.$ref as string).slice(2).split("/").reduce((at: Node | undefined, part) => at?.[part.replaceAll("~1", "/").replaceAll("~0", "~")], contract);
  return n;
}

/** By operation id and status: the name of the first example of the JSON answer, where it has named examples. */
const firstExamples = new Map<string, Map<string, string>>();
for (const item of Object.values(contract.paths as Node)) {
  for (const op of Object.values(item as Node) as Node[]) {
    if (typeof op?.operationId !== "string") continue;
    const byStatus = new Map<string, string>();
    for (const [status, response] of Object.entries((op.responses ?? {}) as Node)) {
      const media = deref(response)?.content?.["application/json"] as Node | undefined;
      const first = media && media.example === undefined ? Object.keys((media.examples ?? {}) as Node)[0] : undefined;
      if (first !== undefined) byStatus.set(status, first);
    }
    firstExamples.set(op.operationId, byStatus);
  }
}

/** The preferences of a `Prefer` header by name, as Prism reads them (RFC 7240: `name=value; param`, comma-separated). */
function preferences(prefer: string): Map<string, string> {
  return new Map(
    prefer.split(",").map((preference) => {
      const [name = "", ...value] = preference.split(";")[0]!.split("=");
      return [name.trim().toLowerCase(), value.join("=").trim().replace(/^"(.*)"$/, "$1")];
    }),
  );
}

/** The `Prefer` header to send Prism for `operationId`: with `example=` added where `code=` names a status with named examples and no example is named. */
export function preferForPrism(prefer: string, operationId: string): string {
  const asked = preferences(prefer);
  const code = asked.get("code");
  if (code === undefined || asked.has("example")) return prefer;
  const first = firstExamples.get(operationId)?.get(code);
  return first === undefined ? prefer : `${prefer}, example=${first}`;
}
