// openapi-fetch's client type, with the Readable and Writable of openapi-typescript-helpers (which
// type every answer and request body) made to leave primitives whole: they test `T extends object`
// first, which an extensible enumeration's `string & {}` passes, and map it into an object of
// String's methods that no `string` parameter accepts (openapi-ts/openapi-typescript#2765). The
// rest is openapi-fetch's own (0.17), as it declares it; once the helpers guard primitives,
// `Client` from openapi-fetch replaces all of this.
import type { Client as FetchClient, FetchOptions as FetchRequestOptions, ParseAsResponse } from "openapi-fetch";
import type {
  $Read,
  $Write,
  ErrorResponse,
  FilterKeys,
  HttpMethod,
  IsOperationRequestBodyOptional,
  MediaType,
  OperationRequestBodyContent,
  PathsWithMethod,
  RequiredKeysOf,
  ResponseObjectMap,
  SuccessResponse,
} from "openapi-typescript-helpers";

type Primitive = string | number | boolean | bigint | symbol;

export type Readable<T> = T extends $Write<unknown> ? never
  : T extends $Read<infer U> ? Readable<U>
  : T extends (infer E)[] ? Readable<E>[]
  : T extends Primitive ? T
  : T extends object ? { [K in keyof T as NonNullable<T[K]> extends $Write<unknown> ? never : K]: Readable<T[K]> }
  : T;

export type Writable<T> = T extends $Read<unknown> ? never
  : T extends $Write<infer U> ? Writable<U>
  : T extends (infer E)[] ? Writable<E>[]
  : T extends Primitive ? T
  : T extends object ? { [K in keyof T as NonNullable<T[K]> extends $Read<unknown> ? never : K]: Writable<T[K]> } & { [K in keyof T as NonNullable<T[K]> extends $Read<unknown> ? K : never]?: never }
  : T;

type RequestBodyOption<T> = Writable<OperationRequestBodyContent<T>> extends never ? { body?: never }
  : IsOperationRequestBodyOptional<T> extends true ? { body?: Writable<OperationRequestBodyContent<T>> }
  : { body: Writable<OperationRequestBodyContent<T>> };

export type FetchOptions<T> = Omit<FetchRequestOptions<T>, "body"> & RequestBodyOption<T>;

type FetchResponse<T extends Record<string | number, any>, Options, Media extends MediaType> =
  | { data: ParseAsResponse<Readable<SuccessResponse<ResponseObjectMap<T>, Media>>, Options>; error?: never; response: Response }
  | { data?: never; error: Readable<ErrorResponse<ResponseObjectMap<T>, Media>>; response: Response };

type MaybeOptionalInit<Params, Location extends keyof Params> =
  RequiredKeysOf<FetchOptions<FilterKeys<Params, Location>>> extends never ? FetchOptions<FilterKeys<Params, Location>> | undefined : FetchOptions<FilterKeys<Params, Location>>;

type InitParam<Init> = RequiredKeysOf<Init> extends never ? [(Init & { [key: string]: unknown })?] : [Init & { [key: string]: unknown }];

// `any`, as openapi-fetch has it: the generated `paths` is an interface, which no index signature of another type admits.
type Paths = Record<string, any>;

type ClientMethod<P extends Paths, Method extends HttpMethod, Media extends MediaType> = <Path extends PathsWithMethod<P, Method>, Init extends MaybeOptionalInit<P[Path], Method>>(
  url: Path,
  ...init: InitParam<Init>
) => Promise<FetchResponse<P[Path][Method], Init, Media>>;

type ClientRequestMethod<P extends Paths, Media extends MediaType> = <Method extends HttpMethod, Path extends PathsWithMethod<P, Method>, Init extends MaybeOptionalInit<P[Path], Method>>(
  method: Method,
  url: Path,
  ...init: InitParam<Init>
) => Promise<FetchResponse<P[Path][Method], Init, Media>>;

/** What openapi-fetch's `createClient<P>()` answers, typed as above: `GET`, `POST`, … and `request`, `use`, `eject`. */
export type Client<P extends Paths, Media extends MediaType = MediaType> = Pick<FetchClient<P, Media>, "use" | "eject"> & {
  request: ClientRequestMethod<P, Media>;
} & { [Method in HttpMethod as Uppercase<Method>]: ClientMethod<P, Method, Media> };
