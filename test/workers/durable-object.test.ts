// The Durable Object adapter inside workerd (vitest-pool-workers): MyceliumLedgerObject from wrangler.toml's
// LEDGER binding, reached over real RPC stubs.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test"
import { env } from "cloudflare:workers"
import { describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { DurableObjectLedgerStorage, type LedgerObjectNamespace } from "../../src/adapters/durable-object.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import { sha256Hex } from "../../src/core/ledger/model/sha256.ts"

const LEDGER = (env as unknown as { LEDGER: LedgerObjectNamespace }).LEDGER
let n = 0
const fresh = (label: string) => `${label}-${Date.now().toString(36)}-${n++}`

for (const shards of [1, 4]) {
  testLedgerStorage(`durable-object (${shards} shard${shards > 1 ? "s" : ""})`, () => {
    const name = fresh("conf")
    return {
      storage: new DurableObjectLedgerStorage(LEDGER, { name, shards }),
      peer: new DurableObjectLedgerStorage(LEDGER, { name, shards, listPageSize: 2 }),
    }
  })
}

/**
 * A Worker fetch handler as an application would write it: a fresh client per request, claim, and only the
 * winner runs the effect, which appends its own row to an effects log (counted afterwards: it cannot lie).
 */
const app = {
  async fetch(request: Request, bindings: { LEDGER: LedgerObjectNamespace }): Promise<Response> {
    const url = new URL(request.url)
    const ledgerName = url.searchParams.get("ledger") ?? "x"
    const id = url.searchParams.get("rid") ?? "x"
    const worker = url.searchParams.get("worker") ?? "w"
    const storage = new DurableObjectLedgerStorage(bindings.LEDGER, { name: ledgerName, shards: 4 })
    const effects = new DurableObjectLedgerStorage(bindings.LEDGER, { name: `${ledgerName}-effects` })
    const now = Date.now() / 1000
    const r = await storage.tryClaimInflight(
      newEntry({ requestId: id, tool: "send", owner: worker }, now),
      60,
      now,
    )
    if (r.outcome !== "claimed") return Response.json({ outcome: r.outcome })
    await effects.set(
      newEntry({ requestId: `${id}:${crypto.randomUUID()}`, tool: "effect", owner: worker }, now),
    )
    const ok = await storage.tryTransition(
      { ...r.entry, terminalOutcome: "COMPLETED", status: "completed", result: worker },
      { outcomes: ["IN_FLIGHT"], owner: worker, fence: r.entry.fence },
    )
    return Response.json({ outcome: ok ? "executed" : "lost" })
  },
}

describe("DurableObjectLedgerStorage in workerd", () => {
  it("32 concurrent Worker requests through the object: one execution", async () => {
    const ledger = fresh("race")
    const responses = await Promise.all(
      Array.from({ length: 32 }, async (_, i) => {
        const ctx = createExecutionContext()
        const res = await app.fetch(
          new Request(`https://ledger.test/send?ledger=${ledger}&rid=pay-1&worker=w${i}`),
          { LEDGER },
        )
        await waitOnExecutionContext(ctx)
        return (await res.json()) as { outcome: string }
      }),
    )
    expect(responses.filter((r) => r.outcome === "executed")).toHaveLength(1)
    expect(responses.filter((r) => r.outcome === "lost")).toHaveLength(0)
    const effects = new DurableObjectLedgerStorage(LEDGER, { name: `${ledger}-effects` })
    const log = []
    for await (const e of effects.list({ prefix: "pay-1:" })) log.push(e)
    expect(log).toHaveLength(1)
    const stored = await new DurableObjectLedgerStorage(LEDGER, { name: ledger, shards: 4 }).get("pay-1")
    expect(stored?.terminalOutcome).toBe("COMPLETED")
    expect(stored?.result).toBe(log[0]?.owner)
  })

  it("spreads request ids over the shards and merges them back in key order", async () => {
    const s = new DurableObjectLedgerStorage(LEDGER, { name: fresh("spread"), shards: 4, listPageSize: 3 })
    const ids = Array.from({ length: 40 }, (_, i) => `k-${String(i).padStart(3, "0")}`)
    const used = new Set(await Promise.all(ids.map((id) => s.shardOf(id))))
    expect(used.size).toBe(4)
    await Promise.all(ids.map((id) => s.set(newEntry({ requestId: id, tool: "t" }, 1))))
    const seen: string[] = []
    for await (const e of s.list({ prefix: "k-" })) seen.push(e.requestId)
    expect(seen).toEqual(ids)
    const page: string[] = []
    for await (const e of s.list({ prefix: "k-", cursor: "k-010", limit: 7 })) page.push(e.requestId)
    expect(page).toEqual(ids.slice(11, 18))
  })

  it("keeps the shard layout: the first 32 bits of the id's SHA-256, as the hex digest gave them", async () => {
    const s = new DurableObjectLedgerStorage(LEDGER, { name: fresh("layout"), shards: 7 })
    const ids = ["pay-1", "k-000", "é-ü", "😀", "\ud800x", ...Array.from({ length: 60 }, (_, i) => `id-${i}`)]
    for (const id of ids) expect(await s.shardOf(id)).toBe(Number.parseInt(sha256Hex(id).slice(0, 8), 16) % 7)
    // Pinned: a row is found only in the shard that wrote it.
    expect(await Promise.all(ids.slice(0, 5).map((id) => s.shardOf(id)))).toEqual([3, 4, 1, 2, 3])
  })

  it("returns native promises: callers may .catch() and .then(undefined, f) (workerd's RPC promise refuses that)", async () => {
    const s = new DurableObjectLedgerStorage(LEDGER, { name: fresh("native") })
    const p = s.get("nothing")
    expect(p).toBeInstanceOf(Promise)
    expect(await p.catch(() => "failed")).toBeNull()
    expect(await s.get("nothing").then(undefined, () => "failed")).toBeNull()
  })

  it("the worker entry refuses to serve without auth configured, and serves JSON 404s once it is", async () => {
    const worker = (await import("../../src/edge/worker.ts")).default
    const unconfigured = await worker.fetch(
      new Request("https://ledger.test/nope"),
      { LEDGER: env.LEDGER as LedgerObjectNamespace },
      {},
    )
    expect(unconfigured.status).toBe(503)
    expect(((await unconfigured.json()) as { error: { code: string } }).error.code).toBe("misconfigured")
    const local = { LEDGER: env.LEDGER as LedgerObjectNamespace, MYCELIUM_ALLOW_UNAUTHENTICATED: "true" }
    const res = await worker.fetch(new Request("https://ledger.test/nope"), local, {})
    expect(res.status).toBe(404)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("not_found")
  })
})
