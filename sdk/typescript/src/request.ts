// Turning a call into a request (checked before anything is sent), sending it with
// retries, and turning the answer into its value or a typed error.
import { APIConnectionError, APITimeoutError, errorFor, retryAfterSeconds } from "./errors.js";
import { OPERATIONS, type OperationId } from "./operations.js";

type Spec = (typeof OPERATIONS)[OperationId];
const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const UNSENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"]);

export interface Core {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  maxRetries: number;
  fetch: typeof fetch;
}

export interface Prepared {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string | FormData;
}

function text(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  return String(value);
}

function newKey(): string {
  return `tc-${crypto.randomUUID().replaceAll("-", "")}`;
}

/** Give every write a key before its first attempt, so a retry never stores it twice. */
export function fillIdempotencyKeys(body: Record<string, unknown>, spec: string): void {
  const [head = "", ...rest] = spec.split(".");
  if (head.endsWith("[]")) {
    const list = body[head.slice(0, -2)];
    if (Array.isArray(list)) {
      for (const item of list) {
        if (item !== null && typeof item === "object") {
          fillIdempotencyKeys(item as Record<string, unknown>, rest.join("."));
        }
      }
    }
  } else if (!body[head]) {
    body[head] = newKey();
  }
}

/** The request of one call; throws TypeError/RangeError on a bad argument. */
export function prepare(core: Core, opId: OperationId, args: unknown): Prepared {
  const spec: Spec = OPERATIONS[opId];
  if (args === undefined) args = {};
  if (args === null || typeof args !== "object" || Array.isArray(args)) {
    throw new TypeError(`${opId}: the argument must be an object`);
  }
  const rest: Record<string, unknown> = { ...(args as Record<string, unknown>) };
  let path: string = spec.path;
  for (const name of spec.pathParams as readonly string[]) {
    const value = rest[name];
    delete rest[name];
    if (typeof value !== "string" || value === "") {
      throw new TypeError(`${opId}: ${name} must be a non-empty string`);
    }
    if ((spec.uuidParams as readonly string[]).includes(name) && !UUID.test(value)) {
      throw new RangeError(`${opId}: ${name} must be a UUID, got ${JSON.stringify(value)}`);
    }
    path = path.replace(`{${name}}`, encodeURIComponent(value));
  }
  const query = new URLSearchParams();
  for (const name of spec.query as readonly string[]) {
    const value = rest[name];
    delete rest[name];
    if (value === undefined || value === null) continue;
    for (const one of Array.isArray(value) ? value : [value]) query.append(name, text(one));
  }
  const headers: Record<string, string> = {
    Authorization: `Bearer ${core.apiKey}`,
    Accept: "application/json",
  };
  for (const name of spec.headers as readonly string[]) {
    const value = rest[name];
    delete rest[name];
    if (value !== undefined && value !== null) headers[name] = text(value);
  }
  const qs = query.toString();
  const prepared: Prepared = {
    url: `${core.baseUrl}${path}${qs ? `?${qs}` : ""}`,
    method: spec.http,
    headers,
  };
  if (spec.body === "json") {
    for (const name of spec.required as readonly string[]) {
      if (rest[name] === undefined) throw new TypeError(`${opId}: ${name} is required`);
    }
    if (spec.idempotency) fillIdempotencyKeys(rest, spec.idempotency);
    prepared.body = JSON.stringify(rest);
    headers["Content-Type"] = "application/json";
  } else if (spec.body === "multipart") {
    prepared.body = formOf(opId, spec.multipartField ?? "file", rest);
  }
  return prepared;
}

function formOf(opId: string, field: string, rest: Record<string, unknown>): FormData {
  const file = rest.file;
  const name = typeof rest.filename === "string" ? rest.filename : "upload";
  const type = typeof rest.contentType === "string" ? rest.contentType : "application/octet-stream";
  let blob: Blob;
  if (file instanceof Blob) blob = file;
  else if (file instanceof Uint8Array || file instanceof ArrayBuffer) blob = new Blob([file as BlobPart], { type });
  else throw new TypeError(`${opId}: file must be a Blob, Uint8Array or ArrayBuffer`);
  const form = new FormData();
  form.append(field, blob, name);
  return form;
}

function errorCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: string } } | undefined)?.cause;
  return cause?.code;
}

function delayMs(attempt: number, retryAfter: number | null): number {
  const backoff = Math.random() * Math.min(8000, 250 * 2 ** attempt);
  return retryAfter !== null ? Math.max(retryAfter * 1000, backoff) : backoff;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface SendOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  maxRetries?: number;
}

/** One call with its retries: connection errors, 429 and 503 (honouring Retry-After);
 * a write that is not idempotent is retried only when nothing reached the server. */
export async function send(
  core: Core,
  opId: OperationId,
  prepared: Prepared,
  options: SendOptions = {},
): Promise<Response> {
  const spec: Spec = OPERATIONS[opId];
  const maxRetries = options.maxRetries ?? core.maxRetries;
  for (let attempt = 0; ; attempt++) {
    const timeout = AbortSignal.timeout(options.timeoutMs ?? core.timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    let response: Response;
    try {
      response = await core.fetch(prepared.url, {
        method: prepared.method,
        headers: prepared.headers,
        body: prepared.body ?? null,
        signal,
      });
    } catch (error) {
      if (options.signal?.aborted) throw error;
      const timedOut = timeout.aborted;
      const unsent = UNSENT.has(errorCode(error) ?? "");
      if (attempt < maxRetries && (unsent || spec.retry === "all")) {
        await sleep(delayMs(attempt, null));
        continue;
      }
      if (timedOut) throw new APITimeoutError(`${opId}: no answer in time`, { cause: error });
      throw new APIConnectionError(`${opId}: cannot reach Tether: ${String(error)}`, { cause: error });
    }
    const status = response.status;
    const retryable = status === 429 || (status === 503 && spec.retry === "all");
    const wait = retryAfterSeconds(response.headers);
    if (retryable && attempt < maxRetries && (wait === null || wait <= 30)) {
      await response.body?.cancel();
      await sleep(delayMs(attempt, wait));
      continue;
    }
    return response;
  }
}

export async function decode(response: Response): Promise<unknown> {
  if (!response.ok) throw await errorFor(response);
  if (response.status === 204) return undefined;
  const body = await response.text();
  return body ? JSON.parse(body) : undefined;
}

/** The lines of a JSON-lines export, parsed one by one as they arrive. */
export async function* jsonLines(response: Response): AsyncIterable<Record<string, unknown>> {
  if (!response.ok) throw await errorFor(response);
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (line) yield JSON.parse(line) as Record<string, unknown>;
    }
  }
  if (buffered.trim()) yield JSON.parse(buffered) as Record<string, unknown>;
}
