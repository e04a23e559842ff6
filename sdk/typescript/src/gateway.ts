// The chat gateway's one call per message: resolve (cached), context as ready chat
// messages, capture, within a deadline; when Tether is slow or down, the caller's own
// messages with `memory: false` (the chat goes on without memory, never fails).
import { APIError, NotFound } from "./errors.js";
import type { Tether } from "./client.js";
import type { Schemas } from "./types.js";

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
}

export interface ChatContext {
  messages: ChatMessage[];
  context: string;
  relationshipId: string | null;
  memory: boolean;
  degraded: string[];
  elapsedMs: number;
}

export interface GatewayMessage {
  user: string;
  persona: string;
  creator: string;
  facet?: string;
  text: string;
  sessionId: string;
  system?: string;
  history?: ChatMessage[];
  deadlineMs?: number;
}

type ContextOptions = Partial<Omit<Schemas["ContextRequest"], "query" | "messages" | "relationship_id" | "user" | "persona" | "facet">>;

export class Gateway {
  private readonly cache = new Map<string, { id: string; until: number }>();

  constructor(
    private readonly client: Tether,
    readonly deadlineMs = 1000,
    private readonly options: ContextOptions = {},
    private readonly cacheSize = 10_000,
    private readonly cacheTtlMs = 600_000,
  ) {}

  async message(m: GatewayMessage): Promise<ChatContext> {
    const started = performance.now();
    const facet = m.facet ?? "default";
    const key = JSON.stringify([m.user, facet, m.persona, m.creator]);
    const plain: ChatMessage[] = [
      ...(m.system ? [{ role: "system" as const, content: m.system }] : []),
      ...(m.history ?? []),
      { role: "user", content: m.text },
    ];
    const hit = this.cache.get(key);
    const cached = hit && hit.until > Date.now() ? hit.id : null;
    const target = cached
      ? { relationship_id: cached }
      : {
          user: { external_id: m.user },
          persona: { external_id: m.persona, creator_external_id: m.creator },
          facet,
        };
    let ctx: ChatContext;
    try {
      const response = await this.client.call(
        "BuildContext",
        { query: m.text.slice(0, 4000), messages: plain, ...this.options, ...target },
        { timeoutMs: m.deadlineMs ?? this.deadlineMs, maxRetries: 0 },
      );
      this.remember(key, response.relationship_id);
      ctx = {
        messages: response.messages,
        context: response.context,
        relationshipId: response.relationship_id,
        memory: true,
        degraded: response.degraded,
        elapsedMs: performance.now() - started,
      };
    } catch (error) {
      if (error instanceof NotFound) this.cache.delete(key);
      const why = error instanceof APIError ? `tether_error:${error.name}` : "tether_unavailable";
      ctx = { messages: plain, context: "", relationshipId: cached, memory: false, degraded: [why], elapsedMs: performance.now() - started };
    }
    if (ctx.relationshipId) this.client.capture(ctx.relationshipId, m.text, { role: "user", sessionId: m.sessionId });
    return ctx;
  }

  /** Capture the model's answer (queued; returns at once). */
  reply(ctx: ChatContext, text: string, sessionId: string): void {
    if (ctx.relationshipId) this.client.capture(ctx.relationshipId, text, { role: "assistant", sessionId });
  }

  private remember(key: string, id: string): void {
    this.cache.delete(key);
    this.cache.set(key, { id, until: Date.now() + this.cacheTtlMs });
    if (this.cache.size > this.cacheSize) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
  }
}
