// Capture and the gateway under faults, against local HTTP servers that play a Tether
// answering 503, or one that never answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { Tether, RateLimited, ServiceUnavailable } from "../dist/index.js";

function serve(handler) {
  return new Promise((done) => {
    const seen = [];
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        seen.push({ method: req.method, url: req.url, body });
        handler(req, res, seen.length);
      });
    });
    server.listen(0, "127.0.0.1", () => done({ url: `http://127.0.0.1:${server.address().port}`, seen, server }));
  });
}

const reply = (res, status, body, headers = {}) => {
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(JSON.stringify(body));
};

test("capture returns at once, resends after 503 with the same keys, and counts", async () => {
  const { url, seen, server } = await serve((req, res, n) =>
    n <= 2 ? reply(res, 503, { code: "database_unavailable" }, { "Retry-After": "0.1" }) : reply(res, 202, { results: [], stored: true, degraded: [] }),
  );
  const client = new Tether({ apiKey: "tth_x", baseUrl: url });
  const rid = randomUUID();
  const started = performance.now();
  for (let i = 0; i < 20; i++) client.capture(rid, `turn ${i} 第${i}轮`, { sessionId: "s" });
  assert.ok(performance.now() - started < 50, "capture() only queues");
  assert.equal(await client.flush(10_000), true);
  assert.deepEqual(client.captureStats(), { queued: 20, sent: 20, dropped: 0, failed: 0, pending: 0, retries: 2 });
  const keys = seen.map((s) => JSON.parse(s.body).turns.map((t) => t.idempotency_key).join());
  assert.equal(new Set(keys).size, 1, "every resend carried the same keys");
  await client.close();
  server.closeAllConnections();
  server.close();
});

test("a full queue drops the oldest and counts it; close counts what is left", async () => {
  const client = new Tether({ apiKey: "tth_x", baseUrl: "http://127.0.0.1:9", captureQueueSize: 5 });
  for (let i = 0; i < 12; i++) client.capture(randomUUID(), `lost ${i}`);
  await client.close(300);
  const stats = client.captureStats();
  assert.equal(stats.queued, 12);
  assert.equal(stats.sent, 0);
  assert.equal(stats.dropped, 12);
});

test("the gateway answers within its deadline without memory when Tether hangs", async () => {
  const { url, server } = await serve(() => {}); // never answers
  const client = new Tether({ apiKey: "tth_x", baseUrl: url });
  const chat = client.gateway(300);
  const started = performance.now();
  const ctx = await chat.message({ user: "u", persona: "luna", creator: "studio-7", text: "你好", sessionId: "s", system: "You are Luna." });
  const waited = performance.now() - started;
  assert.ok(waited < 500, `waited ${waited} ms`);
  assert.equal(ctx.memory, false);
  assert.deepEqual(ctx.messages, [{ role: "system", content: "You are Luna." }, { role: "user", content: "你好" }]);
  server.closeAllConnections();
  server.closeAllConnections();
  server.close();
});

test("429 and 503 are retried after Retry-After; a write without a key is not", async () => {
  const { url, seen, server } = await serve((req, res, n) => {
    if (req.url.startsWith("/v1/resolve") && n === 1) return reply(res, 429, { code: "rate_limited" }, { "Retry-After": "0.2" });
    if (req.url.startsWith("/v1/resolve")) return reply(res, 201, { relationship_id: randomUUID() });
    return reply(res, 503, { code: "database_unavailable" }, { "Retry-After": "3" });
  });
  const client = new Tether({ apiKey: "tth_x", baseUrl: url });
  const started = performance.now();
  await client.relationships.resolve({ user: { external_id: "u" }, persona: { external_id: "p", creator_external_id: "c" } });
  assert.ok(performance.now() - started >= 200);
  assert.equal(seen.length, 2);
  await assert.rejects(client.apiKeys.create({ role: "gateway" }), (e) => e instanceof ServiceUnavailable && e.retryAfter === 3);
  assert.equal(seen.length, 3, "creating a key is not retried on 503");
  assert.ok(RateLimited);
  server.closeAllConnections();
  server.close();
});
