// Which copy of a row Redis and Upstash read when the row key and its tombstones disagree on the fence. A tombstone
// above the key wins only where it is the newest copy: the key put back alone from an older copy. Under a prefix
// not ending in ':' a Python worker keeps the key and the original's tombstone (`{prefix}-tomb:X`) only, so our own
// tombstone can lag behind, or (after an operator deleted the row the way the original lays it out) name an earlier
// claim of the call.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LedgerStorage, newEntry } from "../../src/adapter-kit.ts"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const tag = runTag("tombfence")
const raw = upstashClient()
const NOW = Date.now() / 1000

beforeAll(requireUpstash)
afterAll(async () => {
  const keys = await raw.keys(`*${tag}*`)
  if (keys.length) await raw.del(...keys)
})

const stores: Array<[string, (prefix: string) => LedgerStorage & { close?: () => unknown }]> = [
  ["upstash", (prefix) => new UpstashLedgerStorage({ redis: upstashClient(), prefix })],
  ["redis", (prefix) => new RedisLedgerStorage({ url: REDIS_URL, prefix })],
]

// A row as a writer of `fence` left it: `held` an in-flight claim whose lease runs, else a failure before the effect.
const row = (id: string, fence: number, owner: string, held: boolean) =>
  JSON.stringify({
    request_id: id,
    tool: "pay",
    args: [],
    kwargs: {},
    status: held ? "in-flight" : "failed",
    terminal_outcome: held ? "IN_FLIGHT" : "FAILED_BEFORE_EFFECT",
    fence,
    result: null,
    error: held ? null : "declined",
    started_at: NOW,
    finished_at: held ? null : NOW,
    lease_until: held ? NOW + 600 : null,
    owner,
    idempotency_key: id,
    side_effect_boundary: "not_crossed",
  })

describe.each(stores)("%s, a prefix without ':'", (name, open) => {
  const opened: Array<{ close?: () => unknown }> = []
  afterAll(async () => {
    for (const s of opened) await s.close?.()
  })
  const setup = (n: string) => {
    const prefix = `mycelium-test:${tag}-${name}-${n}`
    const storage = open(prefix)
    opened.push(storage)
    const keyOf = (id: string) => `${prefix}${id}`
    const legacyOf = (id: string) => `${prefix}-tomb:${id}`
    return { storage, keyOf, legacyOf }
  }

  it("a Python worker's fresh claim after the row was deleted in the original's layout is held, never stolen", async () => {
    const { storage, keyOf, legacyOf } = setup("fresh")
    const id = "order-1"
    // Our worker failed the call three times: every copy (key, our tombstone, the original's) at fence 3.
    await storage.set({ ...newEntry({ requestId: id, tool: "pay", owner: "ts" }, NOW), fence: 3 })
    await storage.set({
      ...newEntry({ requestId: id, tool: "pay", owner: "ts" }, NOW),
      fence: 3,
      terminalOutcome: "FAILED_BEFORE_EFFECT",
      status: "failed",
    })
    // An operator deletes the row as the original lays it out (key and `{prefix}-tomb:`), and a Python worker claims
    // the call afresh: fence 1, its lease running, in both of the keys it knows.
    await raw.del(keyOf(id), legacyOf(id))
    await raw.set(keyOf(id), row(id, 1, "python:1", true))
    await raw.set(legacyOf(id), row(id, 1, "python:1", true))
    // The Python worker holds the call: a claim here must wait for it, not take the call over at fence 4 and run it
    // beside the Python worker.
    expect(await storage.get(id)).toMatchObject({ fence: 1, owner: "python:1", terminalOutcome: "IN_FLIGHT" })
    const r = await storage.tryClaimInflight(
      newEntry({ requestId: id, tool: "pay", owner: "ts-2" }, NOW),
      60,
      NOW,
    )
    expect([r.outcome, r.entry.fence, r.entry.owner]).toEqual(["in_flight", 1, "python:1"])
    expect(await raw.get(keyOf(id))).toMatchObject({ fence: 1, owner: "python:1" })
    const listed = []
    for await (const e of storage.list({ prefix: id })) listed.push([e.fence, e.owner])
    expect(listed).toEqual([[1, "python:1"]])
  })

  it("the key restored alone below both tombstones: get() and the scripts read the newest copy", async () => {
    const { storage, keyOf, legacyOf } = setup("max")
    const id = "order-2"
    // Ours wrote fence 2 everywhere; a Python worker then took the call over (fence 3: key and the original's
    // tombstone); then the key alone was put back from a copy at fence 1.
    await storage.set({
      ...newEntry({ requestId: id, tool: "pay", owner: "ts" }, NOW),
      fence: 2,
      leaseUntil: NOW + 600,
    })
    await raw.set(keyOf(id), row(id, 3, "python:1", true))
    await raw.set(legacyOf(id), row(id, 3, "python:1", true))
    await raw.set(keyOf(id), row(id, 1, "old", true))
    expect(await storage.get(id)).toMatchObject({ fence: 3, owner: "python:1" })
    const listed = []
    for await (const e of storage.list({ prefix: id })) listed.push([e.fence, e.owner])
    expect(listed).toEqual([[3, "python:1"]])
    const r = await storage.tryClaimInflight(
      newEntry({ requestId: id, tool: "pay", owner: "ts-2" }, NOW),
      60,
      NOW,
    )
    expect([r.outcome, r.entry.fence, r.entry.owner]).toEqual(["in_flight", 3, "python:1"])
  })
  it("the key gone, our tombstone an abandoned claim, the original's a Python completion: a redispatch replays it", async () => {
    const { storage, keyOf, legacyOf } = setup("ghost")
    const id = "order-3"
    // Ours claimed at fence 2 (key, our tombstone, the original's) and died; its lease lapsed.
    await storage.set({
      ...newEntry({ requestId: id, tool: "pay", owner: "ts" }, NOW - 700),
      fence: 2,
      leaseUntil: NOW - 100,
    })
    // A Python worker took the call over and completed it (fence 3: the key and the original's tombstone only).
    const done = JSON.stringify({
      ...JSON.parse(row(id, 3, "python:1", false)),
      status: "completed",
      terminal_outcome: "COMPLETED",
      error: null,
      result: { paid: true },
    })
    await raw.set(keyOf(id), done)
    await raw.set(legacyOf(id), done)
    // Then the key alone went (an eviction, a DEL of it): the tombstones are what stops the call from running again.
    await raw.del(keyOf(id))
    expect(await storage.get(id)).toMatchObject({ fence: 3, terminalOutcome: "COMPLETED" })
    const r = await storage.tryClaimInflight(
      newEntry({ requestId: id, tool: "pay", owner: "ts-2" }, NOW),
      60,
      NOW,
    )
    expect([r.outcome, r.entry.fence, r.entry.result]).toEqual(["completed", 3, { paid: true }])
  })
})
