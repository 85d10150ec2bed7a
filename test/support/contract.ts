// Validates bodies against the bundled contract with Ajv (JSON Schema 2020-12, as OpenAPI 3.1).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { parse } from "yaml";

export const contractPath = fileURLToPath(new URL("../../generated/openapi.yaml", import.meta.url));

export interface Operation {
  operationId: string;
  method: string;
  path: string;
  op: Record<string, any>;
}

export const contract: Record<string, any> = parse(readFileSync(contractPath, "utf8"));

type Node = Record<string, any>;

/** A node of the bundled contract with its local `$ref`s followed (JSON Pointer escapes decoded). */
export function deref(node: Node | undefined): Node {
  let n = node ?? {};
  while (typeof n.$ref === "string") n = (n.$ref as string).slice(2).split("/").reduce((a: Node, p) => a[p.replaceAll("~1", "/").replaceAll("~0", "~")], contract);
  return n;
}

export const operations: Operation[] = Object.entries(contract.paths as Record<string, Record<string, any>>).flatMap(
  ([path, item]) =>
    ["get", "put", "post", "delete", "patch"]
      .filter((m) => item[m])
      .map((method) => ({ operationId: item[method].operationId as string, method, path, op: item[method] })),
);

const ajv = new Ajv2020.default({ strict: false, allErrors: true, validateFormats: true });
addFormats.default(ajv);
ajv.addFormat("int32", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
ajv.addFormat("int64", { type: "string", validate: (s: string) => /^-?[0-9]{1,19}$/.test(s) });
ajv.addVocabulary(["example", "x-extensible-enum", "discriminator"]);
ajv.addSchema(contract, "openapi");

const pointer = (...parts: string[]) => "openapi#/" + parts.map((p) => p.replaceAll("~", "~0").replaceAll("/", "~1")).join("/");

/** Errors of `body` against the JSON response schema of `operationId` for `status` (or `default`); [] when valid. */
export function responseErrors(operationId: string, status: number, body: unknown): string[] {
  const operation = operations.find((o) => o.operationId === operationId);
  if (!operation) return [`unknown operation ${operationId}`];
  const key = operation.op.responses[String(status)] ? String(status) : "default";
  let response = operation.op.responses[key];
  if (!response) return [`${operationId} documents no ${status} response`];
  let ptr: string[] = ["paths", operation.path, operation.method, "responses", key];
  if (response.$ref) {
    ptr = (response.$ref as string).replace(/^#\//, "").split("/");
    response = ptr.reduce((node: any, p) => node[p], contract);
  }
  if (!response.content?.["application/json"]) return [`${operationId} ${status} has no JSON body`];
  const validate = ajv.getSchema(pointer(...ptr, "content", "application/json", "schema"));
  if (!validate) return [`no schema for ${operationId} ${status}`];
  return validate(body) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message} ${JSON.stringify(e.params)}`);
}

/** Errors of `value` against a named component schema; [] when valid. */
export function schemaErrors(name: string, value: unknown): string[] {
  const validate = ajv.getSchema(pointer("components", "schemas", name));
  if (!validate) return [`no schema ${name}`];
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`);
}

/** Errors of `body` against the request body schema of `operationId` (JSON or form); [] when valid. */
export function requestBodyErrors(operationId: string, body: unknown): string[] {
  const operation = operations.find((o) => o.operationId === operationId);
  const content = operation?.op.requestBody?.content as Record<string, unknown> | undefined;
  const mediaType = content && Object.keys(content)[0];
  if (!operation || !mediaType) return [`${operationId} takes no body`];
  const validate = ajv.getSchema(pointer("paths", operation.path, operation.method, "requestBody", "content", mediaType, "schema"));
  if (!validate) return [`no request schema for ${operationId}`];
  return validate(body) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`);
}

/**
 * Errors of a request the service sent (`headers` as Node received them, the raw `body`) against
 * the contract's webhook `name`: its header parameters, `Content-Type`, body size and JSON body; [] when valid.
 */
export function webhookErrors(name: string, headers: Readonly<Record<string, string | string[] | undefined>>, body: string): string[] {
  const op = contract.webhooks?.[name]?.post as Node | undefined;
  if (!op) return [`the contract declares no webhook ${name}`];
  const errors: string[] = [];
  (op.parameters as Node[]).forEach((parameter, i) => {
    const declared = deref(parameter);
    const value = headers[(declared.name as string).toLowerCase()];
    if (value === undefined) return void (declared.required && errors.push(`header ${declared.name} is missing`));
    const at = parameter.$ref ? [...(parameter.$ref as string).slice(2).split("/"), "schema"] : ["webhooks", name, "post", "parameters", String(i), "schema"];
    const validate = ajv.getSchema(pointer(...at));
    if (!validate?.(value)) errors.push(`header ${declared.name} ${JSON.stringify(value)}: ${(validate?.errors ?? []).map((e) => e.message).join(", ")}`);
  });
  const [mediaType] = Object.keys(op.requestBody.content as Node);
  if (headers["content-type"] !== mediaType) errors.push(`content-type ${JSON.stringify(headers["content-type"])}, declared ${mediaType}`);
  const maxBytes = op["x-max-body-bytes"] as number;
  if (Buffer.byteLength(body, "utf8") > maxBytes) errors.push(`the body is larger than the ${maxBytes} bytes declared`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [...errors, "the body is not JSON"];
  }
  const validate = ajv.getSchema(pointer("webhooks", name, "post", "requestBody", "content", mediaType!, "schema"));
  if (!validate) return [...errors, `no body schema for webhook ${name}`];
  return validate(parsed) ? errors : [...errors, ...(validate.errors ?? []).map((e) => `body ${e.instancePath || "/"} ${e.message}`)];
}
