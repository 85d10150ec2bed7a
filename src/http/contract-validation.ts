// express-openapi-validator's request checks as one synchronous step, without its per-request
// overhead: the contract loaded and prepared once, and a request checked either by the validator's
// own steps (the first of each operation and content type, any with a query string, any the fast path
// does not pass: every refusal is the validator's, in its words) or, on the fast path, by the very
// functions it compiled for that operation and media type, so never less strictly. Why:
// docs/benchmarks.md, "What the profiles led to".
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { defaultSerDes } from "express-openapi-validator/dist/framework/base.serdes.js";
import { OpenApiContext } from "express-openapi-validator/dist/framework/openapi.context.js";
import { OpenApiSpecLoader } from "express-openapi-validator/dist/framework/openapi.spec.loader.js";
import type { OpenApiValidatorOpts } from "express-openapi-validator/dist/framework/types.js";
import { RequestValidator } from "express-openapi-validator/dist/middlewares/openapi.request.validator.js";
import { ResponseValidator } from "express-openapi-validator/dist/middlewares/openapi.response.validator.js";
import { SchemaPreprocessor } from "express-openapi-validator/dist/middlewares/parsers/schema.preprocessor.js";
import { ContentType } from "express-openapi-validator/dist/middlewares/util.js";
import { OpenApiValidator } from "express-openapi-validator/dist/openapi.validator.js";
import { AnswerValidation } from "./answer-validation.js";
import { mediaTypeOf } from "./request-body.js";
import { rememberRouteMetadata, type OpenApiMetadata, type WithMetadata } from "./route-metadata.js";
import { pathParametersOf, routeOf } from "./route-table.js";

/** The validator's options, the contract given by its file's path. */
export type ContractValidationOptions = OpenApiValidatorOpts & { apiSpec: string };

type Step = (req: Request, res: Response, next: NextFunction) => unknown;
type Compiled = (data: unknown) => boolean;

/** The validator's internals this module calls (express-openapi-validator 5; test/http/requests/contract-validation.test.ts checks them). */
interface ValidatorInternals {
  options: OpenApiValidatorOpts & { validateResponses: false | object; ignoreUndocumented?: boolean; useRequestUrl?: boolean; serDes: { deserialize?: unknown; serialize?: unknown }[] };
  ajvOpts: { preprocessor: object; request: object; response: object };
  metadataMiddleware(context: OpenApiContext, responseApiDoc: unknown): Step;
}

/** What RequestValidator keeps: its two Ajv instances, the compiled validators cached under its keys. */
interface RequestValidatorInternals {
  ajv: { getSchema(key: string): Compiled | undefined };
  ajvBody: { getSchema(key: string): Compiled | undefined };
  validate: Step;
}

/** An operation's compiled validators for one media type, and its metadata without path parameters. */
interface FastEntry {
  general: Compiled;
  body: Compiled;
  metadata: Omit<OpenApiMetadata, "pathParams">;
}

const NO_CONTENT_TYPE = "";

const mentions = (apiDoc: unknown, text: string): boolean => JSON.stringify((apiDoc as { paths?: unknown }).paths ?? {}).includes(text);

/** The request body media types each operation declares, lower-case, by operation id. */
type MediaTypes = ReadonlyMap<string, ReadonlySet<string>>;

class Validation {
  private readonly fast = new Map<string, Map<string, FastEntry>>();

  constructor(
    private readonly mediaTypes: MediaTypes,
    private readonly metadata: Step,
    private readonly requests: RequestValidatorInternals | undefined,
    private readonly answers: AnswerValidation | undefined,
    /**
     * False when a request could pass the validator's compiled validators and still be refused by
     * it (a discriminator, chosen outside them), or when they change what they validate in a way a
     * second run would see (a deserializer; the defaults they fill in are the same the second time).
     */
    private readonly fastPathAllowed: boolean,
  ) {}

  handle(req: WithMetadata, res: Response, next: NextFunction): void {
    this.showMediaType(req);
    const answers = this.answers;
    const done = answers ? (err?: unknown) => (err === undefined ? (answers.watch(req, res, next), next()) : next(err)) : next;
    if (this.passesFast(req)) return done();
    this.run(this.metadata, req, res, (err?: unknown) => {
      if (err !== undefined || !this.requests) return done(err);
      this.run((q, r, n) => this.requests!.validate(q, r, n), req, res, (failure?: unknown) => {
        if (failure === undefined) this.remember(req);
        done(failure);
      });
    });
  }

  private run(step: Step, req: Request, res: Response, next: NextFunction): void {
    try {
      step(req, res, next);
    } catch (e) {
      next(e);
    }
  }

  /**
   * The Content-Type the validator sees: the declared media type alone (an undeclared one bare, which
   * it refuses 415), none for an operation without a body. It keys what it compiles by the whole
   * header, so each new spelling (`; a=1`, any value on a GET) would compile two more validators,
   * without bound; what it decides depends on the media type alone (the parsers checked the charset).
   */
  private showMediaType(req: Request): void {
    const route = routeOf(req);
    const header = req.headers["content-type"];
    if (!route || header === undefined) return;
    const declared = this.mediaTypes.get(route.operationId);
    if (!declared || declared.size === 0) delete req.headers["content-type"];
    else req.headers["content-type"] = mediaTypeOf(header);
  }

  /** The request passes the validator's compiled validators as the validator would call them. */
  private passesFast(req: WithMetadata): boolean {
    if (!this.requests || req.url.includes("?")) return false;
    const route = routeOf(req);
    const entry = route && this.fast.get(route.operationId)?.get(req.headers["content-type"] ?? NO_CONTENT_TYPE);
    const pathParams = entry && pathParametersOf(route, req.path);
    if (!entry || !pathParams) return false;
    req.params = pathParams;
    const data = { query: req.query ?? {}, headers: req.headers, params: req.params, cookies: undefined, body: req.body };
    if (!entry.general(data) || !entry.body(data)) return false;
    if (this.answers) req.openapi = { ...entry.metadata, pathParams } as OpenApiMetadata;
    return true;
  }

  /** After the validator passed a request: its validators for the request's operation and Content-Type, as it keyed them. */
  private remember(req: WithMetadata): void {
    const route = routeOf(req);
    const openapi = req.openapi;
    if (!this.fastPathAllowed || !route || !openapi || !this.requests) return;
    const contentType = req.headers["content-type"] ?? NO_CONTENT_TYPE;
    let entries = this.fast.get(route.operationId);
    // Keyed by the media type shown to the validator: no more entries than the contract declares (and none).
    if (entries?.has(contentType)) return;
    // RequestValidator.validate's cache key (express-openapi-validator 5).
    const key = `${req.method}-${openapi.expressRoute}-${ContentType.from(req).normalize() ?? "not_provided"}`;
    const general = this.requests.ajv.getSchema(key);
    const body = this.requests.ajvBody.getSchema(key);
    if (!general || !body) return;
    const { pathParams: _own, ...metadata } = openapi;
    if (!entries) this.fast.set(route.operationId, (entries = new Map()));
    entries.set(contentType, { general, body, metadata });
  }
}

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"] as const;

/** Each operation's declared request body media types, from the prepared contract (its request bodies dereferenced). */
function declaredMediaTypes(apiDoc: unknown): MediaTypes {
  type Operation = { operationId?: string; requestBody?: { content?: Record<string, unknown> } };
  const paths = ((apiDoc as { paths?: Record<string, Partial<Record<(typeof METHODS)[number], Operation>>> }).paths ?? {});
  const types = new Map<string, ReadonlySet<string>>();
  for (const item of Object.values(paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op?.operationId) types.set(op.operationId, new Set(Object.keys(op.requestBody?.content ?? {}).map(mediaTypeOf)));
    }
  }
  return types;
}

type Parameter = { in?: string; allowReserved?: boolean };
type ParameterHolder = { parameters?: Parameter[] };

/**
 * Marks every query parameter of the validator's copy of the contract `allowReserved`: otherwise it
 * refuses RFC 3986's reserved characters (`:`, `/`, `+`...), which a query may hold as they are
 * (parameter-form.ts checks queries against RFC 3986 instead). The contract itself does not say it,
 * so clients still percent-encode.
 */
function allowReservedInQueries(apiDoc: unknown): void {
  const doc = apiDoc as { paths?: Record<string, ParameterHolder & Partial<Record<(typeof METHODS)[number], ParameterHolder>>>; components?: { parameters?: Record<string, Parameter> } };
  const parameters = [
    ...Object.values(doc.components?.parameters ?? {}),
    ...Object.values(doc.paths ?? {}).flatMap((item) => [...(item.parameters ?? []), ...METHODS.flatMap((m) => item[m]?.parameters ?? [])]),
  ];
  for (const p of parameters) if (p.in === "query") p.allowReserved = true;
}

/**
 * The contract loaded and prepared as the validator's own chain does it, and its steps built, but
 * three: the path-parameters step (no operation is dispatched through an Express route: app.ts sets
 * them), security (app.ts authenticates) and multipart (no operation takes such a body; loading
 * fails should one be added).
 */
async function load(options: ContractValidationOptions): Promise<Validation> {
  const validator = new OpenApiValidator({ ...options }) as unknown as ValidatorInternals;
  const spec = await new OpenApiSpecLoader({ apiDoc: options.apiSpec, validateApiSpec: options.validateApiSpec ?? true, $refParser: validator.options.$refParser }).load();
  if (mentions(spec.apiDoc, '"multipart/')) throw new Error("contract-validation.ts does not run the validator's multipart step, and an operation takes a multipart body");
  allowReservedInQueries(spec.apiDoc);
  const { apiDocRes } = new SchemaPreprocessor(spec.apiDoc, validator.ajvOpts.preprocessor as never, validator.options.validateResponses as never).preProcess();
  const context = new OpenApiContext(spec, validator.options.ignorePaths as never, validator.options.ignoreUndocumented, validator.options.useRequestUrl);
  const metadata = rememberRouteMetadata(validator.metadataMiddleware(context, apiDocRes) as RequestHandler);
  const requests = options.validateRequests === false ? undefined : (new RequestValidator(context.apiDoc, validator.ajvOpts.request) as unknown as RequestValidatorInternals);
  // The response validator as the validator's responseValidationMiddleware builds it. A serializer
  // changes the answer it checks, so a second check (the fast path's, then the validator's) could
  // differ; the validator's own ones only turn a Date into its ISO string, which a second check
  // then sees, as the first saw it, as a string.
  const responseValidator = options.validateResponses ? new ResponseValidator(apiDocRes, validator.ajvOpts.response, validator.options.validateResponses || undefined, context.serial) : undefined;
  const ownSerializersOnly = validator.options.serDes.every((s) => !s.serialize || (defaultSerDes as unknown[]).includes(s));
  const answers = responseValidator && new AnswerValidation(responseValidator, context.serial, ownSerializersOnly);
  const replayable = !mentions(context.apiDoc, '"discriminator"') && !validator.options.serDes.some((s) => s.deserialize);
  return new Validation(declaredMediaTypes(context.apiDoc), metadata, requests, answers, replayable);
}

/**
 * The validator's metadata, request and response steps as one middleware. The first requests wait
 * for the contract to load; a contract that does not load fails them, as the validator's chain does.
 */
export function contractValidation(options: ContractValidationOptions): RequestHandler {
  let validation: Validation | undefined;
  const loading = load(options).then((loaded) => (validation = loaded));
  // A failure is answered to each request that waits for it, never left unhandled.
  loading.catch(() => undefined);
  return (req, res, next) => {
    if (validation) return validation.handle(req, res, next);
    loading.then((loaded) => loaded.handle(req, res, next), next);
  };
}
