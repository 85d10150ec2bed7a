// What the docs show of an operation's answer: its 200 example, and where the keys of an example
// and of a real answer differ.
import { deref, operations } from "./contract.js";

type Node = Record<string, any>;

export const isObject = (v: unknown): v is Node => typeof v === "object" && v !== null && !Array.isArray(v);

/** The 200 example of an operation, as the mock serves it and the docs show it. */
export function example200(operationId: string): unknown {
  const op = operations.find((o) => o.operationId === operationId)!.op;
  const media = deref(op.responses["200"]).content["application/json"] as Node;
  return media.example ?? Object.values((media.examples ?? {}) as Node)[0]?.value ?? deref(media.schema).example;
}

/** Where the key sets of `example` and `real` differ; a value that is not an object on either side (null) ends the comparison there. */
export function keyDifferences(example: unknown, real: unknown, at = "$"): string[] {
  if (Array.isArray(example) && Array.isArray(real)) {
    if (!isObject(example[0])) return [];
    if (real.length === 0) return [`${at}: the real answer's list is empty, so its items cannot be compared (set up state)`];
    // Item by item as far as both go: the first at least, and each step of an execution.
    return real.slice(0, example.length).flatMap((item, i) => keyDifferences(example[i], item, `${at}[${i}]`));
  }
  if (!isObject(example) || !isObject(real)) return [];
  const exampleKeys = Object.keys(example).sort();
  const realKeys = Object.keys(real).sort();
  const problems: string[] = [];
  const onlyExample = exampleKeys.filter((k) => !realKeys.includes(k));
  const onlyReal = realKeys.filter((k) => !exampleKeys.includes(k));
  if (onlyExample.length > 0) problems.push(`${at}: only in the example: ${onlyExample.join(", ")}`);
  if (onlyReal.length > 0) problems.push(`${at}: only in the real answer: ${onlyReal.join(", ")}`);
  for (const key of exampleKeys.filter((k) => realKeys.includes(k))) problems.push(...keyDifferences(example[key], real[key], `${at}.${key}`));
  return problems;
}
