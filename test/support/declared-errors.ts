// The error answers the contract declares: for each operation and status, the examples of its
// response, each naming a reason and the message the server gives with it.
import { deref, operations } from "./contract.js";

export interface DeclaredError {
  operationId: string;
  status: number;
  /** The example's name in the contract. */
  name: string;
  reason: string;
  message: string;
}

type Node = Record<string, any>;
const reasonOf = (body: Node | undefined): string | undefined =>
  (body?.details as Node[] | undefined)?.find((d) => d["@type"] === "type.googleapis.com/google.rpc.ErrorInfo")?.reason as string | undefined;

export const declaredErrors: DeclaredError[] = operations.flatMap(({ operationId, op }) =>
  Object.entries(op.responses as Node).flatMap(([status, response]) => {
    if (!/^[45]\d\d$/.test(status)) return [];
    const media = deref(response).content?.["application/json"] as Node | undefined;
    const examples: [string, Node][] = Object.entries((media?.examples ?? {}) as Node).map(([name, e]) => [name, deref(e).value as Node]);
    if (media?.example) examples.push(["example", media.example as Node]);
    return examples.map(([name, body]) => ({ operationId, status: Number(status), name, reason: reasonOf(body) ?? "", message: String(body?.message ?? "") }));
  }),
);

const key = (operationId: string, status: number, reason: string) => `${operationId} ${status} ${reason}`;
const declared = new Set(declaredErrors.map((d) => key(d.operationId, d.status, d.reason)));

/** Whether the contract declares `reason` among the examples of `operationId`'s `status` answer. */
export const isDeclared = (operationId: string, status: number, reason: string): boolean => declared.has(key(operationId, status, reason));
