// Typed errors: every problem+json answer becomes one of these, never a bare HTTP error.

export class TetherError extends Error {
  override name = "TetherError";
}

/** The request got no answer: the server is unreachable or the connection broke. */
export class APIConnectionError extends TetherError {
  override name = "APIConnectionError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** No answer within the timeout. */
export class APITimeoutError extends APIConnectionError {
  override name = "APITimeoutError";
}

export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  code?: string;
  request_id?: string | null;
  errors?: { field: string; message: string }[];
  [key: string]: unknown;
}

/** The API answered with an error (RFC 9457 problem+json); `code` is the stable part. */
export class APIError extends TetherError {
  override name = "APIError";
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  readonly requestId: string | null;
  readonly problem: Problem;
  readonly headers: Headers;

  constructor(status: number, problem: Problem, headers: Headers) {
    const code = problem.code ?? "http_error";
    super(`${status} ${code}: ${problem.detail ?? problem.title ?? ""}`);
    this.status = status;
    this.code = code;
    this.title = problem.title ?? "";
    this.detail = problem.detail ?? "";
    this.requestId = problem.request_id ?? headers.get("x-request-id");
    this.problem = problem;
    this.headers = headers;
  }
}

export class BadRequest extends APIError { override name = "BadRequest"; }
export class Unauthenticated extends APIError { override name = "Unauthenticated"; }
export class Forbidden extends APIError { override name = "Forbidden"; }
/** 404: no such object, or one out of this key's reach (the API does not say which). */
export class NotFound extends APIError { override name = "NotFound"; }
export class Conflict extends APIError { override name = "Conflict"; }

/** 412: the object changed since you read it; `currentEtag` says where it is now. */
export class PreconditionFailed extends Conflict {
  override name = "PreconditionFailed";
  readonly currentEtag: string | null;
  readonly currentVersion: number | null;
  constructor(status: number, problem: Problem, headers: Headers) {
    super(status, problem, headers);
    this.currentEtag = (problem.current_etag as string | undefined) ?? headers.get("etag");
    const version = problem.current_version;
    this.currentVersion = typeof version === "number" ? version : null;
  }
}

export class PayloadTooLarge extends APIError { override name = "PayloadTooLarge"; }
export class UnsupportedMediaType extends APIError { override name = "UnsupportedMediaType"; }
/** 421: the tenant lives in another region; this deployment refuses its writes. */
export class WrongRegion extends APIError { override name = "WrongRegion"; }

/** 422: `errors` names each invalid field. */
export class ValidationError extends APIError {
  override name = "ValidationError";
  readonly errors: { field: string; message: string }[];
  constructor(status: number, problem: Problem, headers: Headers) {
    super(status, problem, headers);
    this.errors = Array.isArray(problem.errors) ? problem.errors : [];
  }
}

export class PreconditionRequired extends APIError { override name = "PreconditionRequired"; }

export function retryAfterSeconds(headers: Headers): number | null {
  const value = headers.get("retry-after");
  if (value === null) return null;
  const seconds = Number(value);
  return Number.isFinite(seconds) ? Math.max(0, seconds) : null;
}

/** 429 (`rate_limited`, `quota_exceeded`): wait `retryAfter` seconds. */
export class RateLimited extends APIError {
  override name = "RateLimited";
  readonly retryAfter: number | null;
  constructor(status: number, problem: Problem, headers: Headers) {
    super(status, problem, headers);
    this.retryAfter = retryAfterSeconds(headers);
  }
}

/** 503: a store is unavailable; retry after `retryAfter` seconds. */
export class ServiceUnavailable extends APIError {
  override name = "ServiceUnavailable";
  readonly retryAfter: number | null;
  constructor(status: number, problem: Problem, headers: Headers) {
    super(status, problem, headers);
    this.retryAfter = retryAfterSeconds(headers);
  }
}

/** Any other 5xx: a bug in Tether; report it with `requestId`. */
export class ServerError extends APIError { override name = "ServerError"; }

type ErrorClass = new (status: number, problem: Problem, headers: Headers) => APIError;
const BY_STATUS: Record<number, ErrorClass> = {
  400: BadRequest, 401: Unauthenticated, 403: Forbidden, 404: NotFound, 409: Conflict,
  412: PreconditionFailed, 413: PayloadTooLarge, 415: UnsupportedMediaType, 421: WrongRegion,
  422: ValidationError, 428: PreconditionRequired, 429: RateLimited, 503: ServiceUnavailable,
};

export async function errorFor(response: Response): Promise<APIError> {
  const text = await response.text();
  let problem: Problem;
  try {
    const parsed: unknown = JSON.parse(text);
    problem = parsed !== null && typeof parsed === "object" ? (parsed as Problem) : { detail: text };
  } catch {
    problem = { detail: text.slice(0, 500) };
  }
  const kind = BY_STATUS[response.status] ?? (response.status >= 500 ? ServerError : APIError);
  return new kind(response.status, problem, response.headers);
}
