// The TypeScript SDK against a live Tether: resources, typed errors, pagination,
// arguments refused before sending (Chinese and English).
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Tether, NotFound, Forbidden, Unauthenticated, ValidationError, PreconditionFailed } from "../dist/index.js";
import { liveTether } from "./live.mjs";

const LUNA = { external_id: "luna", creator_external_id: "studio-7" };
let admin, gateway, url;

before(async () => {
  const live = await liveTether();
  url = live.url;
  admin = new Tether({ apiKey: live.adminKey, baseUrl: url });
  const key = await admin.apiKeys.create({ role: "gateway", name: "ts test" });
  gateway = new Tether({ apiKey: key.token, baseUrl: url });
});

test("resolve, memories, pages, search and context", async () => {
  const { relationship_id: rid } = await gateway.relationships.resolve({ user: { external_id: "ts-u1" }, persona: LUNA });
  const contents = ["用户喜欢吃四川火锅", "The user plays the cello", "用户的猫叫小白"];
  for (const content of contents) {
    const made = await gateway.memories.create({ relationship_id: rid, content });
    assert.match(made.external_id, /^tc-/); // an idempotency key was given
  }
  const walked = [];
  for await (const m of gateway.memories.list({ relationship_id: rid, limit: 1 })) walked.push(m.content);
  assert.deepEqual(walked, contents);
  const page = await gateway.memories.list({ relationship_id: rid, limit: 2 });
  assert.equal(page.items.length, 2);
  assert.ok(page.next_cursor);
  const hits = await gateway.memories.search({ relationship_id: rid, query: "火锅" });
  assert.equal(hits.items[0].content, contents[0]);
  const ctx = await gateway.context.build({ relationship_id: rid, query: "周末吃什么？" });
  assert.match(ctx.context, /火锅/);
});

test("the same external_id stores one memory", async () => {
  const { relationship_id: rid } = await gateway.relationships.resolve({ user: { external_id: "ts-u2" }, persona: LUNA });
  const a = await gateway.memories.create({ relationship_id: rid, content: "The user is allergic to peanuts", external_id: "m-1" });
  const b = await gateway.memories.create({ relationship_id: rid, content: "The user is allergic to peanuts", external_id: "m-1" });
  assert.equal(a.id, b.id);
});

test("problems become typed errors", async () => {
  await assert.rejects(gateway.memories.get({ relationship_id: randomUUID(), memory_id: randomUUID() }), (e) => {
    assert.ok(e instanceof NotFound);
    assert.equal(e.status, 404);
    assert.ok(e.requestId);
    return true;
  });
  await assert.rejects(gateway.apiKeys.list(), Forbidden);
  const stranger = new Tether({ apiKey: "tth_nope", baseUrl: url });
  await assert.rejects(stranger.relationships.list({}), Unauthenticated);
  const { relationship_id: rid } = await gateway.relationships.resolve({ user: { external_id: "ts-u3" }, persona: LUNA });
  await assert.rejects(gateway.memories.list({ relationship_id: rid, cursor: "nope" }), (e) => {
    assert.ok(e instanceof ValidationError);
    assert.deepEqual(e.errors, [{ field: "cursor", message: "invalid" }]);
    return true;
  });
});

test("a stale profile edit says where the profile is now", async () => {
  const r = await gateway.relationships.resolve({ user: { external_id: "ts-u4" }, persona: LUNA });
  const current = await admin.personas.getProfile({ persona_id: r.creator_persona_id });
  const etag = `"${current.version}"`;
  await admin.personas.putProfile({ persona_id: r.creator_persona_id, "If-Match": etag, tone: "温柔" });
  await assert.rejects(admin.personas.putProfile({ persona_id: r.creator_persona_id, "If-Match": etag, tone: "冷淡" }), (e) => {
    assert.ok(e instanceof PreconditionFailed);
    assert.equal(e.currentEtag, `"${current.version + 1}"`);
    return true;
  });
});

test("bad arguments are refused before sending", async () => {
  await assert.rejects(gateway.memories.list({ relationship_id: "nope" }), RangeError);
  await assert.rejects(gateway.memories.create({ relationship_id: randomUUID() }), TypeError);
  await assert.rejects(gateway.memories.get(null), TypeError);
});

test("an audit export streams JSON lines; an upload is a document", async () => {
  const key = await admin.apiKeys.create({ role: "compliance", name: "auditor" });
  const auditor = new Tether({ apiKey: key.token, baseUrl: url });
  const lines = [];
  for await (const line of auditor.audit.export({})) lines.push(line);
  // Entries, then the signed trailer (decision 0071).
  const trailer = lines.pop();
  assert.equal(trailer.algorithm, "ed25519");
  assert.equal(trailer.trailer.count, lines.length);
  assert.ok(lines.length > 0);
  for (const event of lines) assert.ok(event.action && event.line_mac);
  assert.equal((await auditor.audit.verify()).ok, true);
  const base = await admin.knowledge.createBase({ name: "Kettle manuals" });
  const doc = await admin.knowledge.upload({
    knowledge_base_id: base.id,
    file: new TextEncoder().encode("# Kettle\n\nWarranty: two years. 保修两年。\n"),
    filename: "manual.md",
    contentType: "text/markdown",
  });
  assert.equal(doc.filename, "manual.md");
});
