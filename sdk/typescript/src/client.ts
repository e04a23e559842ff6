// The client: every API resource is a property (`client.memories.create({...})`),
// built from the operation table; types come from the API document.
import { CaptureQueue, type CaptureStats, type CaptureTurn } from "./capture.js";
import { Gateway } from "./gateway.js";
import { OPERATIONS, type OperationId } from "./operations.js";
import { decode, jsonLines, prepare, send, type Core, type SendOptions } from "./request.js";
import type { Args, CallOptions, Page, Pager, Resources, Result } from "./types.js";

export interface TetherOptions {
  /** The API key (default: the TETHER_API_KEY environment variable). */
  apiKey?: string;
  /** Where Tether listens (default: TETHER_URL, else http://127.0.0.1:8000). */
  baseUrl?: string;
  /** Milliseconds per request (each call may pass its own `timeoutMs`). */
  timeoutMs?: number;
  /** Retries after connection errors, 429 and 503 (jittered, honouring Retry-After). */
  maxRetries?: number;
  /** Turns `capture()` may hold; beyond it the oldest is dropped (and counted). */
  captureQueueSize?: number;
  /** Milliseconds each capture request may take. */
  captureDeadlineMs?: number;
  fetch?: typeof fetch;
}

function env(name: string): string | undefined {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];
}

class PagerImpl<I> implements Pager<I> {
  constructor(
    private readonly client: Tether,
    private readonly opId: OperationId,
    private readonly args: Record<string, unknown>,
    private readonly options: CallOptions,
  ) {}

  private page(cursor?: string): Promise<Page<I>> {
    const args = cursor ? { ...this.args, cursor } : this.args;
    return this.client.call(this.opId, args as never, this.options) as Promise<Page<I>>;
  }

  then<A = Page<I>, B = never>(
    onfulfilled?: ((value: Page<I>) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): PromiseLike<A | B> {
    return this.page().then(onfulfilled, onrejected);
  }

  catch<B = never>(onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<Page<I> | B> {
    return this.page().catch(onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<Page<I>> {
    return this.page().finally(onfinally);
  }

  async *pages(): AsyncIterable<Page<I>> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.page(cursor);
      yield page;
      if (!page.next_cursor || page.items.length === 0) return;
      cursor = page.next_cursor;
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<I> {
    for await (const page of this.pages()) yield* page.items;
  }
}

export interface Tether extends Resources {}

export class Tether {
  readonly core: Core;
  private readonly queue: CaptureQueue;

  constructor(options: TetherOptions = {}) {
    const apiKey = options.apiKey ?? env("TETHER_API_KEY");
    if (!apiKey) throw new TypeError("an API key is needed: pass apiKey or set TETHER_API_KEY");
    const baseUrl = (options.baseUrl ?? env("TETHER_URL") ?? "http://127.0.0.1:8000").replace(/\/+$/, "");
    this.core = {
      apiKey,
      baseUrl,
      timeoutMs: options.timeoutMs ?? 10_000,
      maxRetries: options.maxRetries ?? 2,
      fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
    };
    this.queue = new CaptureQueue(this.core, options.captureQueueSize ?? 1000, options.captureDeadlineMs ?? 3000);
    const resources: Record<string, Record<string, unknown>> = {};
    for (const [opId, spec] of Object.entries(OPERATIONS)) {
      const id = opId as OperationId;
      const group = (resources[spec.resource] ??= {});
      group[spec.method] = spec.paginated
        ? (args: Record<string, unknown> = {}, opts: CallOptions = {}) => new PagerImpl(this, id, args, opts)
        : spec.response === "ndjson"
          ? (args: Record<string, unknown> = {}, opts: CallOptions = {}) => this.lines(id, args, opts)
          : (args: Record<string, unknown> = {}, opts: CallOptions = {}) => this.call(id, args as never, opts);
    }
    Object.assign(this, resources);
  }

  /** Any operation by its id (what the resource methods call). */
  async call<K extends OperationId>(opId: K, args: Args<K>, options: CallOptions & SendOptions = {}): Promise<Result<K>> {
    const prepared = prepare(this.core, opId, args);
    return (await decode(await send(this.core, opId, prepared, options))) as Result<K>;
  }

  private async *lines(opId: OperationId, args: unknown, options: CallOptions): AsyncIterable<Record<string, unknown>> {
    const prepared = prepare(this.core, opId, args);
    yield* jsonLines(await send(this.core, opId, prepared, options));
  }

  /** Queue one turn and return at once; never throws (see `captureStats()`). */
  capture(relationshipId: string, text: string, turn: CaptureTurn = {}): void {
    this.queue.capture(relationshipId, text, turn);
  }

  captureStats(): CaptureStats {
    return this.queue.stats();
  }

  flush(timeoutMs?: number): Promise<boolean> {
    return this.queue.flush(timeoutMs);
  }

  gateway(deadlineMs = 1000, contextOptions: ConstructorParameters<typeof Gateway>[2] = {}): Gateway {
    return new Gateway(this, deadlineMs, contextOptions);
  }

  /** Flush the capture queue (`timeoutMs`, 5 s by default) and stop it. */
  close(timeoutMs = 5000): Promise<void> {
    return this.queue.close(timeoutMs);
  }
}
