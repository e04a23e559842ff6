// Capture that never blocks the chat: `capture()` queues the turn and returns; the queue
// sends batches with a deadline per request (AbortSignal.timeout), resends after failures
// (each turn carries an idempotency key, so a resend is stored once), drops the oldest
// when full (counted, logged once per interval), and flushes on close and before exit.
import type { Core } from "./request.js";

export interface CaptureStats {
  queued: number;
  sent: number;
  dropped: number;
  failed: number;
  pending: number;
  retries: number;
}

export interface CaptureTurn {
  role?: "user" | "assistant";
  sessionId?: string;
  at?: Date | string;
  idempotencyKey?: string;
}

interface Pending {
  relationshipId: string;
  turn: Record<string, string>;
}

const MAX_BATCH = 100;
const sleep = (ms: number) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    (timer as { unref?: () => void }).unref?.(); // never keeps a process alive
  });

export class CaptureQueue {
  private items: Pending[] = [];
  private inFlight = 0;
  private running = false;
  private closed = false;
  private counters = { queued: 0, sent: 0, dropped: 0, failed: 0, retries: 0 };
  private unreported = 0;
  private warnedAt = 0;

  constructor(
    private readonly core: Core,
    readonly capacity = 1000,
    readonly deadlineMs = 3000,
    readonly logIntervalMs = 30_000,
    readonly lingerMs = 20,
  ) {
    if (capacity < 1) throw new RangeError("the capture queue needs room for at least one turn");
    const proc = (globalThis as { process?: { once?: (e: string, f: () => void) => void } }).process;
    proc?.once?.("beforeExit", () => void this.close());
  }

  capture(relationshipId: string, text: string, turn: CaptureTurn = {}): void {
    try {
      const role = turn.role ?? "user";
      if (this.closed || typeof text !== "string" || !text || !["user", "assistant"].includes(role)) {
        this.counters.failed += 1;
        console.error("tether capture: a turn was not queued (closed, empty text or bad role)");
        return;
      }
      const body: Record<string, string> = {
        session_id: turn.sessionId ?? "default",
        role,
        text,
        idempotency_key: turn.idempotencyKey ?? `tc-${crypto.randomUUID().replaceAll("-", "")}`,
      };
      if (turn.at) body.at = turn.at instanceof Date ? turn.at.toISOString() : turn.at;
      if (this.items.length >= this.capacity) {
        this.items.shift();
        this.drop(1, "the capture queue is full");
      }
      this.items.push({ relationshipId: String(relationshipId), turn: body });
      this.counters.queued += 1;
      if (!this.running) void this.run();
    } catch (error) {
      this.counters.failed += 1; // the chat never sees our failure
      console.error("tether capture:", error);
    }
  }

  stats(): CaptureStats {
    return { ...this.counters, pending: this.items.length + this.inFlight };
  }

  private drop(count: number, why: string, force = false): void {
    this.counters.dropped += count;
    this.unreported += count;
    const now = Date.now();
    if (force || now - this.warnedAt >= this.logIntervalMs) {
      console.warn(`tether capture: dropped ${this.unreported} turn(s) (${why}); ${this.counters.dropped} in all`);
      this.warnedAt = now;
      this.unreported = 0;
    }
  }

  private take(): Pending[] {
    const first = this.items[0];
    if (!first) return [];
    const batch: Pending[] = [];
    const rest: Pending[] = [];
    for (const item of this.items) {
      if (item.relationshipId === first.relationshipId && batch.length < MAX_BATCH) batch.push(item);
      else rest.push(item);
    }
    this.items = rest;
    this.inFlight += batch.length;
    return batch;
  }

  private async run(): Promise<void> {
    this.running = true;
    let failures = 0;
    try {
      while (this.items.length > 0 && !this.closed) {
        await sleep(this.lingerMs); // let the turns of this moment join one batch
        const batch = this.take();
        const [outcome, retryAfter] = await this.sendBatch(batch);
        this.inFlight -= batch.length;
        if (outcome === "sent") {
          this.counters.sent += batch.length;
          failures = 0;
        } else if (outcome === "refused") {
          this.counters.failed += batch.length;
          failures = 0;
        } else {
          this.counters.retries += 1;
          const room = this.capacity - this.items.length;
          const keep = room > 0 ? batch.slice(-room) : [];
          this.items = [...keep, ...this.items];
          if (keep.length < batch.length) this.drop(batch.length - keep.length, "the capture queue is full");
          failures += 1;
          const backoff = (0.5 + Math.random() / 2) * Math.min(5000, 200 * 2 ** Math.min(failures, 10));
          await sleep(Math.max(backoff, (retryAfter ?? 0) * 1000));
        }
      }
    } finally {
      this.running = false;
    }
  }

  private async sendBatch(batch: Pending[]): Promise<["sent" | "refused" | "retry", number | null]> {
    const rid = encodeURIComponent(batch[0]?.relationshipId ?? "");
    try {
      const response = await this.core.fetch(`${this.core.baseUrl}/v1/relationships/${rid}/turns`, {
        method: "POST",
        headers: { Authorization: `Bearer ${this.core.apiKey}`, "Content-Type": "application/json" },
        body: JSON.stringify({ turns: batch.map((p) => p.turn) }),
        signal: AbortSignal.timeout(this.deadlineMs),
      });
      const text = await response.text();
      if (response.ok) return ["sent", null];
      if (response.status === 429 || response.status === 408 || response.status >= 500) {
        const wait = Number(response.headers.get("retry-after"));
        return ["retry", Number.isFinite(wait) && wait > 0 ? wait : null];
      }
      console.error(`tether capture: the API refused ${batch.length} turn(s) with ${response.status}: ${text.slice(0, 300)}`);
      return ["refused", null];
    } catch {
      return ["retry", null];
    }
  }

  /** Wait until every queued turn is sent or refused; false if `timeoutMs` passed first. */
  async flush(timeoutMs = 30_000): Promise<boolean> {
    const end = Date.now() + timeoutMs;
    while (this.items.length + this.inFlight > 0) {
      if (Date.now() >= end) return false;
      if (!this.running && this.items.length > 0) void this.run();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return true;
  }

  /** Flush (5 s at most), then stop; what is left is counted as dropped and logged. */
  async close(timeoutMs = 5000): Promise<void> {
    if (this.closed) return;
    await this.flush(timeoutMs);
    this.closed = true;
    if (this.items.length > 0) {
      this.drop(this.items.length, "unsent when the client closed", true);
      this.items = [];
    }
  }
}
