// express-openapi-validator's response validation (on in development and tests), without its
// per-answer lookups. An answer takes the fast path, the very function the validator compiled for the
// operation's status, when it would choose that function whatever the headers (the status's only
// media type is JSON); anything else (several media types or none, a 5xx, an empty body, an answer the
// fast path does not pass) goes through the validator's own step, installed then over `res.json`. So
// every refusal is the validator's. Why: bench/RESULTS.md, "The request path every operation pays".
import type { NextFunction, Request, Response } from "express";
import type { ResponseValidator } from "express-openapi-validator/dist/middlewares/openapi.response.validator.js";
import { routeOf } from "./route-table.js";

type Compiled = (data: unknown) => boolean;

/** What ResponseValidator builds per operation: validators by status key ("200", "4XX", "default"), then media type. */
type ByStatus = Record<string, Record<string, Compiled>>;

/** What ResponseValidator keeps and calls (express-openapi-validator 5; test/http/requests/contract-validation.test.ts checks them). */
interface ResponseValidatorInternals {
  validate(): (req: Request, res: Response, next: NextFunction) => void;
  _getOrBuildValidator(req: Request, responses: unknown): ByStatus;
}

/** The parts of `req.openapi` (the validator's metadata) read here. */
interface Metadata {
  serial?: number;
  _responseSchema?: { responses?: unknown };
}

const JSON_MEDIA_TYPE = "application/json";

export class AnswerValidation {
  private readonly validator: ResponseValidatorInternals;
  private readonly step: (req: Request, res: Response, next: NextFunction) => void;
  /** Each operation's validators, as the validator built them (it keys them per request Content-Type too, to the same effect). */
  private readonly byOperation = new Map<string, ByStatus>();

  constructor(
    validator: ResponseValidator,
    /** The contract's serial: the validator checks only answers to requests of this contract. */
    private readonly serial: number,
    /** False when the validator's check changes the answer (a serializer): every answer then goes its way. */
    private readonly fastPathAllowed: boolean,
  ) {
    this.validator = validator as unknown as ResponseValidatorInternals;
    this.step = this.validator.validate();
  }

  /** Checks the answer `res.json` is given, once, before it is sent; a refusal goes to `next`. */
  watch(req: Request, res: Response, next: NextFunction): void {
    const original = res.json;
    res.json = (body: unknown) => {
      res.json = original;
      if (this.passesFast(req, res, body)) return original.call(res, body);
      // The validator's step wraps `res.json` (now the original) and calls next() once installed;
      // an answer it refuses reaches next(err).
      this.step(req, res, (err?: unknown) => void (err !== undefined && next(err)));
      return res.json(body);
    };
  }

  private passesFast(req: Request, res: Response, body: unknown): boolean {
    const status = res.statusCode;
    const openapi = (req as Request & { openapi?: Metadata }).openapi;
    const route = routeOf(req);
    if (!this.fastPathAllowed || !openapi || openapi.serial !== this.serial || !route || res.headersSent || status >= 500 || body === undefined || body === null) return false;
    try {
      const forStatus = this.forStatus(req, route.operationId, openapi, status);
      // The validator's choice of media type: the only one there is.
      const mediaTypes = forStatus ? Object.keys(forStatus) : [];
      const check = mediaTypes.length === 1 && mediaTypes[0] === JSON_MEDIA_TYPE ? forStatus?.[JSON_MEDIA_TYPE] : undefined;
      return check !== undefined && check({ response: body });
    } catch {
      // A build or check that throws (a serializer's) is the validator's to report.
      return false;
    }
  }

  /** The validators for `status` the validator would choose: the status, then its class, then the default. */
  private forStatus(req: Request, operationId: string, openapi: Metadata, status: number): Record<string, Compiled> | undefined {
    let byStatus = this.byOperation.get(operationId);
    if (!byStatus) {
      byStatus = this.validator._getOrBuildValidator(req, openapi._responseSchema?.responses);
      this.byOperation.set(operationId, byStatus);
    }
    return byStatus[status] ?? byStatus[`${String(status)[0]}XX`] ?? byStatus.default;
  }
}
