// The one suite every LedgerStorage must pass, the project's own adapters and third-party ones alike
// (`mycelium-runtime/conformance`, docs/adapter-kit.md). Runs in Node, workerd, Chromium, Deno and Bun: vitest APIs
// only (Deno maps them onto Deno.test, Bun onto bun:test).
import { afterAll, beforeEach, describe, expect, it } from "vitest"
import { entryFromRow, entryToRow, type LedgerEntryInit, newEntry } from "../adapter-kit.ts"
import {
  ActionLedger,
  type LedgerEntry,
  LedgerStaleFenceError,
  type LedgerStorage,
  TerminalOutcome,
  type TransitionExpectation,
} from "../core/index.ts"
import type { LedgerStorageFixtureFactory } from "./factory.ts"
import { runModelSequence } from "./ledger-model.ts"
import { ledgerTextCases } from "./ledger-text.ts"
import { PY_NOW, PYTHON_ROWS, pythonJson } from "./python-rows.ts"

/**
 * Skips a capability case with its reason: vitest's (and the Deno shim's) `ctx.skip`. Bun passes a `done`
 * callback instead of a context and has no runtime skip, so there the case logs the same "skipped:" line and the
 * caller returns (this repository's scripts/runtime-suites.mjs counts those lines as skipped, not passed).
 */
function skipCase(ctx: unknown, reason: string): void {
  const skip = (ctx as { skip?: unknown } | null)?.skip
  if (typeof skip === "function") return void skip.call(ctx, reason)
  console.log(`skipped: ${reason}`)
}

const T0 = 1_800_000_000.25

let seq = 0
/** Request ids unique per test so shared servers need no wipe between tests. */
function rid(label: string): string {
  seq++
  return `conf-${Date.now().toString(36)}-${seq}-${label}`
}

function entry(init: LedgerEntryInit): LedgerEntry {
  return newEntry({ owner: "w1", kwargs: { amount: 10 }, ...init }, T0)
}

async function seeded(s: LedgerStorage, init: LedgerEntryInit): Promise<LedgerEntry> {
  const e = entry(init)
  await s.set(e)
  return e
}

const ALL: TerminalOutcome[] = Object.values(TerminalOutcome)

async function collect(it: AsyncIterable<LedgerEntry>): Promise<LedgerEntry[]> {
  const out: LedgerEntry[] = []
  for await (const e of it) out.push(e)
  return out
}

export function testLedgerStorage(name: string, factory: LedgerStorageFixtureFactory): void {
  describe(`LedgerStorage conformance: ${name}`, () => {
    let s: LedgerStorage
    let peer: LedgerStorage
    let writeRaw: ((requestId: string, json: string) => Promise<void>) | undefined
    let leaseClock: (() => number) | undefined
    const cleanups: Array<() => Promise<void> | void> = []

    beforeEach(async () => {
      const made = await factory()
      s = made.storage
      peer = made.peer ?? made.storage
      writeRaw = made.writeRaw
      leaseClock = made.leaseClock
      if (made.cleanup) cleanups.push(made.cleanup)
    })

    // Every cleanup runs even when one throws (the others close connections and drop tables); then the first
    // error fails the suite.
    afterAll(async () => {
      const errors: unknown[] = []
      for (const c of cleanups) {
        try {
          await c()
        } catch (e) {
          errors.push(e)
        }
      }
      if (errors.length) throw errors[0]
    })

    it("returns null for an unknown id", async () => {
      expect(await s.get(rid("missing"))).toBeNull()
    })

    it("round-trips every field of an entry", async () => {
      const e = entry({
        requestId: rid("rt"),
        tool: "send_payment",
        args: [1, "x"],
        kwargs: { amount: 10.5, recipient: "acct_é", nested: { a: [1, { b: null }] }, tool_call_id: "tc" },
        terminalOutcome: "COMPLETED",
        status: "completed",
        fence: 3,
        result: { ok: true, id: "pi_1", amounts: [0.1, 1e-7, 123456789.123] },
        error: null,
        finishedAt: T0 + 2.5,
        leaseUntil: null,
        sideEffectBoundary: "crossed",
        externalOperationRef: "pi_1",
        providerIdempotencyKey: "k1",
        providerKeyFirstAttemptAt: T0,
        lastHeartbeatAt: T0 + 1,
        decision: {
          allowed: true,
          verdicts: [{ name: "p", allowed: true, reason: null }],
          deniedReasons: [],
        },
        effectPhase: "COMMITTED",
        effectProtocolRequired: true,
        effectId: "eff",
        parentRequestId: "parent",
        handoffId: "h1",
        receiptRef: "rcpt-1",
      })
      await s.set(e)
      expect(await peer.get(e.requestId)).toEqual(e)
      // The fields the row above leaves null, set: a store that drops one of them must not pass.
      const failed = entry({
        requestId: rid("rt-failed"),
        tool: "send_payment",
        terminalOutcome: "FAILED_AFTER_EFFECT",
        status: "failed",
        fence: 2,
        error: "RuntimeError: gateway timeout\nretry é",
        leaseUntil: T0 + 60,
        result: null,
      })
      await s.set(failed)
      expect(await peer.get(failed.requestId)).toEqual(failed)
    })

    it("claims a new row: fence 1, lease, heartbeat, IN_FLIGHT", async () => {
      const e = entry({ requestId: rid("new"), tool: "t" })
      const r = await s.tryClaimInflight(e, 60, T0)
      expect(r.outcome).toBe("claimed")
      expect(r.entry).toMatchObject({
        fence: 1,
        leaseUntil: T0 + 60,
        lastHeartbeatAt: T0,
        terminalOutcome: "IN_FLIGHT",
      })
      expect(await peer.get(e.requestId)).toEqual(r.entry)
    })

    it("claims with an unbounded lease when leaseTtl <= 0", async () => {
      const r = await s.tryClaimInflight(entry({ requestId: rid("unb"), tool: "t" }), 0, T0)
      expect(r.entry.leaseUntil).toBeNull()
      const again = await s.tryClaimInflight(entry({ requestId: r.entry.requestId, tool: "t" }), 0, T0 + 1e9)
      expect(again.outcome).toBe("in_flight")
    })

    // Postgres added 1 as float8::numeric, which keeps 15 digits: past 10^15 the fence jumped, or went back
    // (4503599627370494 became ...491) and the old owner's set() at its own fence passed again.
    it("a reclaim stamps exactly fence + 1, also past 10^15, and the old owner's set() is then stale", async () => {
      const fence = 2 ** 52 - 2
      const prior = await seeded(s, {
        requestId: rid("big-fence"),
        tool: "t",
        terminalOutcome: "FAILED_BEFORE_EFFECT",
        status: "failed",
        fence,
      })
      const r = await s.tryClaimInflight(
        entry({ requestId: prior.requestId, tool: "t", owner: "w2" }),
        60,
        T0,
      )
      expect(r).toMatchObject({ outcome: "claimed", entry: { fence: fence + 1 } })
      expect((await peer.get(prior.requestId))?.fence).toBe(fence + 1)
      await expect(peer.set({ ...prior, result: "stale" })).rejects.toBeInstanceOf(LedgerStaleFenceError)
    })

    // Redis and Upstash took such a row through set() and tryTransition; their scripts decode the stored row with
    // cjson (1,000 levels at most), so every later claim and compare-and-set of the id failed as if Redis were down.
    it("a row nested 1,001 deep is refused by set() and tryTransition, or kept: the id stays claimable either way", async () => {
      let deep: LedgerEntry["result"] = "leaf"
      for (let i = 0; i < 1001; i++) deep = [deep]
      for (const via of ["set", "tryTransition"] as const) {
        const prior = await seeded(s, {
          requestId: rid(`deep-${via}`),
          tool: "t",
          terminalOutcome: "FAILED_BEFORE_EFFECT",
          status: "failed",
          fence: 2,
        })
        const next = { ...prior, result: deep }
        const write =
          via === "set"
            ? s.set(next)
            : s.tryTransition(next, { outcomes: ["FAILED_BEFORE_EFFECT"], fence: 2 })
        const written = await write.then(
          () => true,
          () => false,
        )
        const stored = await peer.get(prior.requestId)
        expect(stored, via).toEqual(written ? next : prior)
        const r = await s.tryClaimInflight(
          entry({ requestId: prior.requestId, tool: "t", owner: "w2" }),
          60,
          T0,
        )
        expect(r, via).toMatchObject({ outcome: "claimed", entry: { fence: 3 } })
      }
    })

    describe("claim classification of every stored state", () => {
      const cases: Array<[string, Partial<LedgerEntry>, "claimed" | "completed" | "in_flight"]> = [
        ["COMPLETED", { terminalOutcome: "COMPLETED", status: "completed" }, "completed"],
        ["IN_FLIGHT held", { terminalOutcome: "IN_FLIGHT", leaseUntil: T0 + 30 }, "in_flight"],
        ["IN_FLIGHT unbounded", { terminalOutcome: "IN_FLIGHT", leaseUntil: null }, "in_flight"],
        ["IN_FLIGHT lease lapsed (EXPIRED)", { terminalOutcome: "IN_FLIGHT", leaseUntil: T0 - 1 }, "claimed"],
        ["IN_FLIGHT lease ends exactly now", { terminalOutcome: "IN_FLIGHT", leaseUntil: T0 }, "claimed"],
        ["stored EXPIRED", { terminalOutcome: "EXPIRED", leaseUntil: T0 - 1 }, "claimed"],
        ["FAILED_BEFORE_EFFECT", { terminalOutcome: "FAILED_BEFORE_EFFECT", status: "failed" }, "claimed"],
        ["FAILED_AFTER_EFFECT", { terminalOutcome: "FAILED_AFTER_EFFECT", status: "failed" }, "claimed"],
        ["BLOCKED", { terminalOutcome: "BLOCKED", status: "failed", leaseUntil: T0 - 100 }, "in_flight"],
        ["UNKNOWN", { terminalOutcome: "UNKNOWN", status: "failed", leaseUntil: T0 - 100 }, "in_flight"],
      ]
      for (const [label, fields, expected] of cases) {
        it(`${label} → ${expected}`, async () => {
          const prior = await seeded(s, { requestId: rid("cls"), tool: "t", fence: 4, ...fields })
          const r = await s.tryClaimInflight(
            entry({ requestId: prior.requestId, tool: "t", owner: "w2" }),
            60,
            T0,
          )
          expect(r.outcome).toBe(expected)
          const stored = await peer.get(prior.requestId)
          if (expected === "claimed") {
            expect(r.entry).toMatchObject({
              fence: 5,
              owner: "w2",
              terminalOutcome: "IN_FLIGHT",
              leaseUntil: T0 + 60,
            })
            expect(stored).toEqual(r.entry)
          } else {
            expect(r.entry).toEqual(prior)
            expect(stored).toEqual(prior)
          }
        })
      }
    })

    describe("reclaim options", () => {
      it("reclaimFence null inserts only", async () => {
        const prior = await seeded(s, {
          requestId: rid("ins"),
          tool: "t",
          terminalOutcome: "FAILED_BEFORE_EFFECT",
          status: "failed",
          fence: 2,
        })
        const r = await s.tryClaimInflight(entry({ requestId: prior.requestId, tool: "t" }), 60, T0, {
          reclaimFence: null,
        })
        expect(r.outcome).toBe("in_flight")
        expect(await peer.get(prior.requestId)).toEqual(prior)
        const fresh = await s.tryClaimInflight(entry({ requestId: rid("ins2"), tool: "t" }), 60, T0, {
          reclaimFence: null,
        })
        expect(fresh.outcome).toBe("claimed")
      })

      it("reclaimFence n takes over only the row still at fence n", async () => {
        const prior = await seeded(s, {
          requestId: rid("rf"),
          tool: "t",
          terminalOutcome: "FAILED_BEFORE_EFFECT",
          status: "failed",
          fence: 2,
        })
        const stale = await s.tryClaimInflight(entry({ requestId: prior.requestId, tool: "t" }), 60, T0, {
          reclaimFence: 1,
        })
        expect(stale.outcome).toBe("in_flight")
        const ok = await s.tryClaimInflight(entry({ requestId: prior.requestId, tool: "t" }), 60, T0, {
          reclaimFence: 2,
        })
        expect(ok.outcome).toBe("claimed")
        expect(ok.entry.fence).toBe(3)
      })

      it("reclaimFence never takes over BLOCKED or UNKNOWN", async () => {
        for (const t of ["BLOCKED", "UNKNOWN"] as const) {
          const prior = await seeded(s, {
            requestId: rid(t),
            tool: "t",
            terminalOutcome: t,
            status: "failed",
            fence: 2,
          })
          const r = await s.tryClaimInflight(entry({ requestId: prior.requestId, tool: "t" }), 60, T0, {
            reclaimFence: 2,
          })
          expect(r.outcome).toBe("in_flight")
        }
      })
    })

    describe("fenced compare-and-set", () => {
      const base = (id: string, t: TerminalOutcome): LedgerEntryInit => ({
        requestId: id,
        tool: "t",
        terminalOutcome: t,
        fence: 3,
        owner: "w1",
        effectPhase: "ATTEMPTING",
        sideEffectBoundary: "maybe_crossed",
        leaseUntil: T0 + 60,
      })

      for (const stored of ALL) {
        it(`stored ${stored}: succeeds only when outcome, owner, fence, phase, boundary and lease match`, async () => {
          const prior = await seeded(s, base(rid(`cas-${stored}`), stored))
          const next = {
            ...prior,
            terminalOutcome: "COMPLETED" as const,
            status: "completed" as const,
            result: 1,
          }
          const miss: TransitionExpectation[] = [
            { outcomes: ALL.filter((o) => o !== stored), fence: 3 },
            { outcomes: [stored], fence: 2 },
            { outcomes: [stored], fence: 4 },
            { outcomes: [stored], fence: 3, owner: "w2" },
            { outcomes: [stored], fence: 3, effectPhase: "INTENDED" },
            { outcomes: [stored], fence: 3, sideEffectBoundary: "not_crossed" },
            { outcomes: [stored], fence: 3, sideEffectBoundary: "crossed" },
            { outcomes: [stored], fence: 3, leaseHeldAt: T0 + 60 },
          ]
          for (const m of miss) expect(await s.tryTransition(next, m), JSON.stringify(m)).toBe(false)
          expect(await peer.get(prior.requestId)).toEqual(prior)
          const hit = {
            outcomes: [stored],
            fence: 3,
            owner: "w1",
            effectPhase: "ATTEMPTING" as const,
            sideEffectBoundary: "maybe_crossed" as const,
            leaseHeldAt: T0 + 59,
          }
          expect(await s.tryTransition(next, hit)).toBe(true)
          expect(await peer.get(prior.requestId)).toEqual(next)
        })
      }

      it("a row the Python original wrote without a boundary matches not_crossed", async () => {
        const id = rid("cas-noboundary")
        const row = { ...entryToRow(entry({ requestId: id, tool: "t", fence: 2, owner: "w1" })) } as Record<
          string,
          unknown
        >
        delete row.side_effect_boundary
        if (writeRaw) await writeRaw(id, JSON.stringify(row))
        else await s.set(entryFromRow(row))
        const prior = (await s.get(id)) as LedgerEntry
        const next = { ...prior, result: 1 }
        const x = { outcomes: ["IN_FLIGHT" as const], fence: 2 }
        expect(await s.tryTransition(next, { ...x, sideEffectBoundary: "maybe_crossed" })).toBe(false)
        expect(await s.tryTransition(next, { ...x, sideEffectBoundary: "not_crossed" })).toBe(true)
      })

      it("a missing row never matches", async () => {
        const e = entry({ requestId: rid("nomatch"), tool: "t" })
        expect(await s.tryTransition(e, { outcomes: ALL, fence: 0 })).toBe(false)
        expect(await peer.get(e.requestId)).toBeNull()
      })

      it("an unbounded lease passes leaseHeldAt", async () => {
        const prior = await seeded(s, { ...base(rid("unbcas"), "IN_FLIGHT"), leaseUntil: null })
        expect(
          await s.tryTransition(
            { ...prior, fence: 3 },
            { outcomes: ["IN_FLIGHT"], fence: 3, leaseHeldAt: T0 + 1e9 },
          ),
        ).toBe(true)
      })

      it("50 concurrent CAS on one row: exactly one wins", async () => {
        const prior = await seeded(s, base(rid("cas-race"), "IN_FLIGHT"))
        const results = await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            (i % 2 ? peer : s).tryTransition(
              { ...prior, terminalOutcome: "COMPLETED", status: "completed", result: i },
              { outcomes: ["IN_FLIGHT"], fence: 3, owner: "w1" },
            ),
          ),
        )
        expect(results.filter(Boolean)).toHaveLength(1)
        const winner = results.indexOf(true)
        expect((await s.get(prior.requestId))?.result).toBe(winner)
      })
    })

    describe("atomic claims under concurrency", () => {
      it("100 concurrent claims of one new id: one winner", async () => {
        const id = rid("race")
        const results = await Promise.all(
          Array.from({ length: 100 }, (_, i) =>
            (i % 2 ? peer : s).tryClaimInflight(entry({ requestId: id, tool: "t", owner: `w${i}` }), 60, T0),
          ),
        )
        const winners = results.filter((r) => r.outcome === "claimed")
        expect(winners).toHaveLength(1)
        expect(results.filter((r) => r.outcome === "in_flight")).toHaveLength(99)
        const stored = await s.get(id)
        expect(stored?.owner).toBe(winners[0]?.entry.owner)
        expect(stored?.fence).toBe(1)
      })

      it("concurrent reclaim of an expired row: one winner, fence bumped once", async () => {
        const prior = await seeded(s, { requestId: rid("reclaim"), tool: "t", fence: 7, leaseUntil: T0 - 5 })
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            (i % 2 ? peer : s).tryClaimInflight(
              entry({ requestId: prior.requestId, tool: "t", owner: `w${i}` }),
              60,
              T0,
            ),
          ),
        )
        expect(results.filter((r) => r.outcome === "claimed")).toHaveLength(1)
        expect((await s.get(prior.requestId))?.fence).toBe(8)
      })

      it("BLOCKED and UNKNOWN rows survive a storm of claims untouched", async () => {
        for (const t of ["BLOCKED", "UNKNOWN"] as const) {
          const prior = await seeded(s, {
            requestId: rid(`storm-${t}`),
            tool: "t",
            terminalOutcome: t,
            status: "failed",
          })
          const results = await Promise.all(
            Array.from({ length: 20 }, () =>
              s.tryClaimInflight(entry({ requestId: prior.requestId, tool: "t" }), 60, T0 + 1e6),
            ),
          )
          expect(results.every((r) => r.outcome === "in_flight")).toBe(true)
          expect(await peer.get(prior.requestId)).toEqual(prior)
        }
      })
    })

    describe("random sequences of claims, compare-and-sets, set() and time agree with the contract", () => {
      // Four seeds of 40 steps over three rows: about 700 store calls, a second or less on a local server.
      for (const seed of [1, 2, 3, 4]) {
        it(`seed ${seed}`, async () => {
          const ids = ["a", "b", "c"].map((x) => rid(`model-${seed}-${x}`))
          await runModelSequence(s, peer, ids, seed, 40, T0, leaseClock)
        })
      }
    })

    describe("list", () => {
      it("filters by prefix, pages with limit and cursor in request-id order", async () => {
        const prefix = `${rid("list")}-`
        const ids = Array.from({ length: 7 }, (_, i) => `${prefix}${String(i).padStart(2, "0")}`)
        for (const id of [...ids].reverse()) await s.set(entry({ requestId: id, tool: "t" }))
        await s.set(entry({ requestId: `${prefix.slice(0, -1)}x-other`, tool: "t" }))
        // Holds the prefix, but not at its start: "starts with", not "contains".
        await s.set(entry({ requestId: `a${prefix}00`, tool: "t" }))
        const all = await collect(s.list({ prefix }))
        expect(all.map((e) => e.requestId)).toEqual(ids)
        const page1 = await collect(s.list({ prefix, limit: 3 }))
        expect(page1.map((e) => e.requestId)).toEqual(ids.slice(0, 3))
        const page2 = await collect(s.list({ prefix, limit: 3, cursor: page1.at(-1)?.requestId }))
        expect(page2.map((e) => e.requestId)).toEqual(ids.slice(3, 6))
        const page3 = await collect(s.list({ prefix, limit: 3, cursor: page2.at(-1)?.requestId }))
        expect(page3.map((e) => e.requestId)).toEqual(ids.slice(6))
      })
    })

    it("finds rows by dispatch id (skipped, with the reason, for a store without findByDispatchId)", async (ctx) => {
      if (!s.findByDispatchId) return skipCase(ctx, NO_FIND_BY_DISPATCH)
      const tc = rid("tc")
      const a = await seeded(s, { requestId: rid("d1"), tool: "t", kwargs: { x: 1, tool_call_id: tc } })
      const b = await seeded(s, { requestId: rid("d2"), tool: "t", kwargs: { x: 2, tool_call_id: tc } })
      await seeded(s, { requestId: rid("d3"), tool: "t", kwargs: { x: 3, tool_call_id: `${tc}-other` } })
      const found = await (s.findByDispatchId as (d: string) => Promise<LedgerEntry[]>)(tc)
      expect(found.map((e) => e.requestId).sort()).toEqual([a.requestId, b.requestId].sort())
    })

    describe("dispatch siblings under concurrency", () => {
      it("racing claims under one dispatch id, other request ids: of every two, one sees the other", async (ctx) => {
        const tc = rid("sib")
        const n = 12
        const ids = Array.from({ length: n }, (_, i) => `${tc}-r${String(i).padStart(2, "0")}`)
        // Each claim's view of its siblings: from its own atomic step, else read after its insert (the ledger's
        // fallback). Either way, of two racing claims the later one must see the earlier one.
        const seen = await Promise.all(
          ids.map(async (id, i) => {
            const store = i % 2 ? peer : s
            const e = entry({ requestId: id, tool: "t", owner: `w${i}`, kwargs: { x: i, tool_call_id: tc } })
            const r = await store.tryClaimInflight(e, 60, T0, { dispatchId: tc })
            expect(r.outcome).toBe("claimed")
            if (r.outcome === "claimed" && r.dispatchSiblings) return r.dispatchSiblings
            if (!store.findByDispatchId) return null
            return await store.findByDispatchId(tc)
          }),
        )
        if (seen.some((v) => v === null)) return skipCase(ctx, NO_SIBLINGS)
        const sets = seen.map((rows) => new Set((rows ?? []).map((e) => e.requestId)))
        for (let i = 0; i < n; i++) {
          for (let j = i + 1; j < n; j++) {
            const a = ids[i] as string
            const b = ids[j] as string
            expect(sets[i]?.has(b) || sets[j]?.has(a), `${a} / ${b}`).toBe(true)
          }
        }
        // Siblings carry what the drift gate compares: tool and arguments.
        for (const rows of seen) {
          for (const e of rows ?? []) {
            expect(e.tool).toBe("t")
            expect(e.kwargs.tool_call_id).toBe(tc)
            expect(e.kwargs.x).toBe(ids.indexOf(e.requestId))
          }
        }
        if (s.findByDispatchId) {
          const all = await s.findByDispatchId(tc)
          expect(all.map((e) => e.requestId).sort()).toEqual(ids)
        }
      })

      it("siblings never include rows of another dispatch id", async (ctx) => {
        const tc = rid("sib-other")
        await s.tryClaimInflight(
          entry({ requestId: `${tc}-a`, tool: "t", kwargs: { tool_call_id: tc } }),
          60,
          T0,
          {
            dispatchId: tc,
          },
        )
        await s.tryClaimInflight(
          entry({ requestId: `${tc}-b`, tool: "t", kwargs: { tool_call_id: `${tc}-x` } }),
          60,
          T0,
          { dispatchId: `${tc}-x` },
        )
        const r = await peer.tryClaimInflight(
          entry({ requestId: `${tc}-c`, tool: "t", kwargs: { tool_call_id: tc } }),
          60,
          T0,
          { dispatchId: tc },
        )
        const rows =
          r.outcome === "claimed" && r.dispatchSiblings
            ? r.dispatchSiblings
            : await peer.findByDispatchId?.(tc)
        if (!rows) return skipCase(ctx, NO_SIBLINGS)
        const ids = (rows ?? []).map((e) => e.requestId)
        expect(ids).toContain(`${tc}-a`)
        expect(ids).not.toContain(`${tc}-b`)
      })
    })

    describe("stale fences (set() and tryTransition refuse a writer whose claim was taken over)", () => {
      it("set() with a lower fence than the stored row is refused with LedgerStaleFenceError; nothing is written", async () => {
        const id = rid("stale-set")
        const stored = await seeded(s, { requestId: id, tool: "t", fence: 5, result: "v5" })
        const stale = peer.set(entry({ requestId: id, tool: "t", fence: 4, result: "stale" }))
        await expect(stale).rejects.toBeInstanceOf(LedgerStaleFenceError)
        await expect(stale).rejects.toMatchObject({ code: "ledger_stale_fence" })
        expect(await s.get(id)).toEqual(stored)
        // An equal or higher fence, or no stored row, is written as given.
        await peer.set(entry({ requestId: id, tool: "t", fence: 5, result: "same fence" }))
        expect((await s.get(id))?.result).toBe("same fence")
        await peer.set(entry({ requestId: id, tool: "t", fence: 9, result: "newer" }))
        expect(await s.get(id)).toMatchObject({ fence: 9, result: "newer" })
      })

      it("after a reclaim, the old owner's set() and tryTransition at its fence are both refused", async () => {
        const id = rid("stale-takeover")
        const first = await s.tryClaimInflight(entry({ requestId: id, tool: "t", owner: "w1" }), 10, T0)
        const second = await peer.tryClaimInflight(
          entry({ requestId: id, tool: "t", owner: "w2" }),
          10,
          T0 + 20,
        )
        expect(first).toMatchObject({ outcome: "claimed", entry: { fence: 1 } })
        expect(second).toMatchObject({ outcome: "claimed", entry: { fence: 2, owner: "w2" } })
        const late: LedgerEntry = {
          ...first.entry,
          terminalOutcome: "COMPLETED",
          status: "completed",
          result: "w1 was late",
        }
        const cas = await s.tryTransition(late, { outcomes: ["IN_FLIGHT"], owner: "w1", fence: 1 })
        expect(cas).toBe(false)
        await expect(s.set(late)).rejects.toBeInstanceOf(LedgerStaleFenceError)
        expect(await peer.get(id)).toMatchObject({
          fence: 2,
          owner: "w2",
          terminalOutcome: "IN_FLIGHT",
          result: null,
        })
      })

      it("20 concurrent stale set() calls never overwrite the current row", async () => {
        const id = rid("stale-storm")
        const current = await seeded(s, { requestId: id, tool: "t", fence: 3, result: "current" })
        const results = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) =>
            (i % 2 ? peer : s).set(entry({ requestId: id, tool: "t", fence: i % 3, result: `stale-${i}` })),
          ),
        )
        for (const r of results) {
          expect(r.status).toBe("rejected")
          expect((r as PromiseRejectedResult).reason).toBeInstanceOf(LedgerStaleFenceError)
        }
        expect(await s.get(id)).toEqual(current)
      })
    })

    describe("text the store keeps, or the ledger refuses before the store would", () => {
      ledgerTextCases(() => s, rid)
    })

    describe("rows written by the Python original (reference §2.1)", () => {
      for (const c of PYTHON_ROWS) {
        it(`${c.label}: read back, classified ${c.claim}`, async () => {
          const id = rid(`py-${c.label.replace(/\W+/g, "_")}`)
          const row = { ...c.row, request_id: id, idempotency_key: id, effect_id: id }
          if (c.legacy)
            for (const k of ["idempotency_key", "effect_id"]) delete (row as Record<string, unknown>)[k]
          const json = pythonJson(row)
          if (writeRaw) await writeRaw(id, json)
          else await s.set(entryFromRow(JSON.parse(json)))
          const got = (await peer.get(id)) as LedgerEntry
          expect(got).toMatchObject({
            requestId: id,
            tool: "send_payment",
            status: row.status,
            fence: c.legacy ? 0 : 1,
            kwargs: { amount: 100, recipient: "acct_\u00e9", tool_call_id: "call_py_1" },
            result: row.result,
            idempotencyKey: id,
            effectId: id,
            schemaVersion: c.legacy ? 1 : 2,
          })
          if (!c.legacy) expect(got.terminalOutcome).toBe(row.terminal_outcome)
          // Listed once.
          const listed = await collect(s.list({ prefix: id }))
          expect(listed.map((e) => e.requestId)).toEqual([id])
          // The store's claim classifies it as the original would, and a reclaim bumps the stored fence.
          const r = await s.tryClaimInflight(
            entry({ requestId: id, tool: "send_payment", owner: "ts-w" }),
            60,
            PY_NOW,
          )
          expect(r.outcome).toBe(c.claim)
          if (c.claim === "claimed") expect(r.entry.fence).toBe((c.legacy ? 0 : 1) + 1)
          else expect(r.entry.requestId).toBe(id)
        })
      }

      it("the ledger replays a completed Python row, v2 and legacy, without running the body", async () => {
        const ledger = new ActionLedger({ storage: s, onWarning: () => {}, clock: { now: () => PY_NOW } })
        let runs = 0
        const pay = ledger.tool(
          {
            name: "send_payment",
            binding: { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" },
          },
          async () => {
            runs++
            return "ran again"
          },
        )
        for (const c of PYTHON_ROWS.filter((x) => x.row.status === "completed")) {
          const id = rid(`py-replay-${c.legacy ? "legacy" : "v2"}`)
          const row = { ...c.row, request_id: id, idempotency_key: id, effect_id: id }
          if (writeRaw) await writeRaw(id, pythonJson(row))
          else await s.set(entryFromRow(row))
          const got = await pay(
            { amount: 100, recipient: "acct_\u00e9" },
            { requestId: id, toolCallId: "call_py_1" },
          )
          expect(got, c.label).toEqual(row.result)
        }
        expect(runs).toBe(0)
      })
    })
  })
}

const NO_FIND_BY_DISPATCH =
  "capability lacking: this store has no findByDispatchId, so rows cannot be found by dispatch id"
const NO_SIBLINGS =
  "capability lacking: this store neither returns dispatchSiblings from a claim nor has findByDispatchId, " +
  "so the ledger's cross-row args-drift gate cannot run on it"
