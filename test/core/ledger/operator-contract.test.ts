// Operator actions and manual calls at their edges: an unbounded lease gives heartbeat silence no meaning, releases
// stay one-shot when two operators race, bad input is refused with a typed error before anything is written.

import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../../src/adapters/file.ts"
import {
  ActionLedger,
  LedgerAlreadyResolvedError,
  LedgerConfigError,
  LedgerHardBlockError,
  LedgerOutcomeAlreadySetError,
  LedgerPollTimeoutError,
  LedgerReleaseRefusedError,
  LedgerResultUnstorableError,
  type LedgerStorage,
  LedgerWorkerAliveError,
  MemoryLedgerStorage,
  ReconcileResult,
} from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const dir = mkdtempSync(join(tmpdir(), "mycelium-operator-contract-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0
/** One backend, opened as `k` separate instances (for the file store: `k` processes on one file). */
const backends: Array<[string, (k: number) => LedgerStorage[]]> = [
  [
    "memory",
    (k) => {
      const s = new MemoryLedgerStorage()
      return Array.from({ length: k }, () => s)
    },
  ],
  [
    "file",
    (k) => {
      const path = join(dir, `l${n++}.json`)
      return Array.from({ length: k }, () => new FileLedgerStorage(path))
    },
  ],
]
const quiet = { onWarning: () => {} }
const binding = { agentId: "pay", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
const T0 = 1_767_225_600

/** Each store's first `get` waits until every store has read: both operators judge the same row. */
function readingTogether(stores: LedgerStorage[]): LedgerStorage[] {
  let arrived = 0
  let go!: () => void
  const all = new Promise<void>((r) => {
    go = r
  })
  return stores.map((s) => ({
    get: async (id: string) => {
      const row = await s.get(id)
      if (++arrived === stores.length) go()
      await all
      return row
    },
    set: (e) => s.set(e),
    tryClaimInflight: (e, ttl, now, o) => s.tryClaimInflight(e, ttl, now, o),
    tryTransition: (next, expect) => s.tryTransition(next, expect),
    list: (o) => s.list(o),
  }))
}

describe("a ledger whose lease never lapses (leaseTtl 0)", () => {
  /** Worker A claims with the tool's own 60 s lease and stalls inside its effect; the clock then runs far past it. */
  async function stalled() {
    const clock = new ManualClock(T0)
    const storage = new MemoryLedgerStorage()
    const mk = (owner: string, extra = {}) =>
      new ActionLedger({ storage, clock, owner, leaseTtl: 0, pollTimeout: 0, ...quiet, ...extra })
    let wake!: () => void
    const stall = new Promise<void>((r) => {
      wake = r
    })
    const effects: string[] = []
    const pay = (who: string) =>
      mk(who).tool({ name: "pay", binding, leaseTtl: 60 }, async (_a: object, tx) =>
        tx.sideEffect(async () => {
          if (who === "A") await stall
          effects.push(who)
          return who
        }),
      )
    const first = pay("A")({}, { requestId: "order-1" }).catch((e: unknown) => e)
    for (let i = 0; i < 50 && (await storage.get("order-1"))?.sideEffectBoundary !== "maybe_crossed"; i++)
      await new Promise((r) => setTimeout(r, 5))
    clock.advance(100_000) // the tool lease lapsed long ago; A is alive, only stalled
    return { clock, storage, mk, pay, effects, wake, first }
  }

  it("counts no heartbeat silence as death: release not_executed and markWorkerDeadFor need an explicit signal", async () => {
    const w = await stalled()
    const ops = w.mk("ops")
    const refused = await ops
      .release("order-1", { verified: "not_executed", by: "ops", reason: "no charge seen" })
      .catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(LedgerWorkerAliveError)
    expect((refused as Error).message).toContain("grace window elapses never")
    expect((refused as Error).message).not.toContain("Infinity")
    await expect(ops.markWorkerDeadFor("order-1", { by: "ops", reason: "quiet" })).rejects.toBeInstanceOf(
      LedgerWorkerAliveError,
    )
    // The redispatch does not run the payment beside the live owner.
    await expect(w.pay("B")({}, { requestId: "order-1" })).rejects.toBeInstanceOf(LedgerHardBlockError)
    expect((await w.storage.get("order-1"))?.operatorResolution).toBeNull()
    // An explicit assertion still works; an explicit presumedDeadAfter still counts silence.
    await ops.markWorkerDeadFor("order-1", { by: "ops", reason: "pod deleted", overrideHeartbeat: true })
    // A was inside its effect all along: one charge, its own.
    w.wake()
    expect(await w.first).toBe("A")
    expect(w.effects).toEqual(["A"])
    const counted = w.mk("ops2", { presumedDeadAfter: 120 })
    await expect(
      counted.release("order-1", { verified: "not_executed", by: "ops", reason: "no charge seen" }),
    ).resolves.toMatchObject({ operatorResolution: "not_executed" })
  })

  it("a reconciler's notExecuted() and reclaimRequiresDeathSignal on a lapsed lease wait for the same explicit signal", async () => {
    const clock = new ManualClock(T0)
    const storage = new MemoryLedgerStorage()
    await storage.set({
      ...newEntry(
        {
          requestId: "order-2",
          tool: "pay",
          owner: "A",
          fence: 1,
          kwargs: { request_id: "order-2" },
          leaseUntil: T0 - 1000,
          lastHeartbeatAt: T0 - 1060,
          externalOperationRef: "pi_1",
          sideEffectBoundary: "maybe_crossed",
          effectProtocolRequired: true,
          effectPhase: "ATTEMPTING",
          decision: { allowed: true, verdicts: [], deniedReasons: [] },
        },
        T0 - 1060,
      ),
    })
    let runs = 0
    const ledger = new ActionLedger({
      storage,
      clock,
      leaseTtl: 0,
      ...quiet,
      reconciler: { reconcile: () => ReconcileResult.notExecuted() },
    })
    const pay = ledger.tool({ name: "pay", binding, leaseTtl: 60 }, async () => ++runs)
    await expect(pay({}, { requestId: "order-2" })).rejects.toBeInstanceOf(LedgerHardBlockError)
    expect(runs).toBe(0)

    // reclaimRequiresDeathSignal: an automatic reclaim of a lapsed lease waits for the signal too.
    await storage.set(
      newEntry(
        {
          requestId: "u-1",
          tool: "upsert",
          owner: "A",
          kwargs: { request_id: "u-1" },
          leaseUntil: T0 - 1000,
        },
        T0 - 1060,
      ),
    )
    const gated = new ActionLedger({
      storage,
      clock,
      leaseTtl: 0,
      reclaimRequiresDeathSignal: true,
      pollTimeout: 0,
      ...quiet,
    })
    const upsert = gated.tool(
      { name: "upsert", binding: { ...binding, sideEffectClass: "idempotent_mutate" }, leaseTtl: 60 },
      async () => ++runs,
    )
    await expect(upsert({}, { requestId: "u-1" })).rejects.toBeInstanceOf(LedgerPollTimeoutError)
    expect(runs).toBe(0)
  })
})

describe.each(backends)("releases are one-shot (%s store)", (_kind, open) => {
  /** An UNKNOWN row (the worker's effect failed mid-call), seen by two operators on their own store instances. */
  async function unknownRow(k: number) {
    const stores = open(k + 1)
    const worker = new ActionLedger({ storage: stores[0] as LedgerStorage, owner: "w", ...quiet })
    const send = worker.tool({ name: "send_email", binding }, async (_a: object, tx) =>
      tx.sideEffect(async () => {
        throw new Error("SMTP connection reset")
      }),
    )
    await send({}, { requestId: "mail-1" }).catch(() => {})
    expect((await worker.get("mail-1"))?.terminalOutcome).toBe("UNKNOWN")
    return { worker, stores: stores.slice(1) }
  }

  it("two operators releasing at once: one verdict lands, the other gets LedgerAlreadyResolvedError", async () => {
    const { worker, stores } = await unknownRow(2)
    const [a, b] = readingTogether(stores).map((storage) => new ActionLedger({ storage, ...quiet }))
    const results = await Promise.allSettled([
      a?.release("mail-1", { verified: "not_executed", by: "alice", reason: "not in the SMTP log" }),
      b?.release("mail-1", { verified: "completed", result: { id: "m-1" }, by: "bob", reason: "in the log" }),
    ])
    const won = results.filter((r) => r.status === "fulfilled")
    const lost = results.filter((r) => r.status === "rejected")
    expect([won.length, lost.length]).toEqual([1, 1])
    expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(LedgerAlreadyResolvedError)
    const winner = (won[0] as PromiseFulfilledResult<{ resolvedBy: string }>).value
    expect((await worker.get("mail-1"))?.resolvedBy).toBe(winner.resolvedBy)
  })

  it("a release records the 'by' and 'reason' it checked: options read once (a getter answering blank later)", async () => {
    const { stores } = await unknownRow(1)
    const ops = new ActionLedger({ storage: stores[0] as LedgerStorage, ...quiet })
    let reads = 0
    const options = {
      verified: "not_executed" as const,
      reason: "not in the SMTP log",
      get by(): string {
        return reads++ === 0 ? "alice" : ""
      },
    }
    const released = await ops.release("mail-1", options)
    expect([released.resolvedBy, reads]).toEqual(["alice", 1])
  })

  it("a release moves the fence: a second one (even on the fence it saw) and the late owner are refused", async () => {
    const { worker, stores } = await unknownRow(2)
    const ops = new ActionLedger({ storage: stores[0] as LedgerStorage, ...quiet })
    const before = await worker.get("mail-1")
    const released = await ops.release("mail-1", { verified: "not_executed", by: "alice", reason: "no mail" })
    expect(released.fence).toBe((before?.fence ?? 0) + 1)
    await expect(
      ops.release("mail-1", {
        verified: "completed",
        by: "bob",
        reason: "seen",
        expectedFence: before?.fence as number,
      }),
    ).rejects.toBeInstanceOf(LedgerAlreadyResolvedError)
    await expect(
      worker.fail("mail-1", "late", { fence: before?.fence as number, owner: "w" }),
    ).rejects.toBeInstanceOf(LedgerOutcomeAlreadySetError)
    // Another instance reads the row as written; the next call consumes the release once (fence + 1 again).
    let runs = 0
    const again = new ActionLedger({ storage: stores[1] as LedgerStorage, ...quiet })
    const send = again.tool({ name: "send_email", binding }, async () => ++runs)
    expect(await send({}, { requestId: "mail-1" })).toBe(1)
    expect(await send({}, { requestId: "mail-1" })).toBe(1)
    expect(await worker.get("mail-1")).toMatchObject({
      terminalOutcome: "COMPLETED",
      fence: released.fence + 1,
    })
  })

  it("a release of an EXPIRED row fences its late owner out", async () => {
    const storage = open(1)[0] as LedgerStorage
    const clock = new ManualClock(T0)
    const w = new ActionLedger({ storage, clock, owner: "w", leaseTtl: 10, ...quiet })
    const decision = { allowed: true, verdicts: [], deniedReasons: [] }
    const c = await w.claim({ tool: "pay", requestId: "p-1", binding, decision })
    if (!c.owned) throw new Error("expected to own the claim")
    clock.advance(11)
    const ops = new ActionLedger({ storage, clock, ...quiet })
    await ops.release("p-1", {
      verified: "completed",
      result: { id: "pi_1" },
      by: "ops",
      reason: "charge found",
      overrideDeathSignal: "host gone",
    })
    await expect(w.complete("p-1", "late", { fence: c.entry.fence, owner: "w" })).rejects.toBeInstanceOf(
      LedgerOutcomeAlreadySetError,
    )
    expect(await storage.get("p-1")).toMatchObject({ terminalOutcome: "COMPLETED", result: { id: "pi_1" } })
  })
})

describe("typed refusals before anything is written", () => {
  async function failed(storage = new MemoryLedgerStorage()) {
    const ledger = new ActionLedger({ storage, ...quiet })
    const t = ledger.tool({ name: "t", binding }, async (_a: object, tx) =>
      tx.sideEffect(() => {
        throw new Error("boom")
      }),
    )
    await t({}, { requestId: "r1" }).catch(() => {})
    return { ledger, storage, before: await storage.get("r1") }
  }

  it("release(completed) with a result the store cannot hold: LedgerReleaseRefusedError, the row unchanged", async () => {
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const throwing = {
      toJSON() {
        throw new TypeError("nope")
      },
    }
    const { ledger, storage, before } = await failed(
      new MemoryLedgerStorage({ limits: { maxRowBytes: 4000 } }),
    )
    for (const result of [cyclic, throwing, "x".repeat(10_000)]) {
      const e = await ledger
        .release("r1", { verified: "completed", result, by: "ops", reason: "found it" })
        .catch((x: unknown) => x)
      expect(e).toBeInstanceOf(LedgerReleaseRefusedError)
      expect(await storage.get("r1")).toEqual(before)
    }
  })

  it("release and markWorkerDeadFor options that are not strings: LedgerReleaseRefusedError", async () => {
    const { ledger, storage, before } = await failed()
    const bad: unknown[] = [
      null,
      { verified: "not_executed", by: 5, reason: "x" },
      { verified: "not_executed", by: "ops", reason: {} },
      { verified: "not_executed", by: "ops", reason: "x", overrideDeathSignal: 5 },
    ]
    for (const options of bad)
      await expect(ledger.release("r1", options as never)).rejects.toBeInstanceOf(LedgerReleaseRefusedError)
    for (const options of [null, { by: 5, reason: "x" }])
      await expect(ledger.markWorkerDeadFor("r1", options as never)).rejects.toBeInstanceOf(
        LedgerReleaseRefusedError,
      )
    expect(await storage.get("r1")).toEqual(before)
  })

  // trim() keeps format characters: a zero-width space passed as who released a payment and why, and as the
  // override that says why a lapsed worker can no longer act.
  it("by, reason and overrideDeathSignal of only invisible characters are blank: LedgerReleaseRefusedError", async () => {
    const { ledger, storage, before } = await failed()
    for (const invisible of ["\u200b", "\u2060\ufeff", " \u200b\t", "\u0000"]) {
      for (const options of [
        { verified: "not_executed", by: invisible, reason: "x" },
        { verified: "not_executed", by: "ops", reason: invisible },
        { verified: "not_executed", by: "ops", reason: "x", overrideDeathSignal: invisible },
      ])
        await expect(ledger.release("r1", options as never)).rejects.toBeInstanceOf(LedgerReleaseRefusedError)
      await expect(ledger.markWorkerDeadFor("r1", { by: invisible, reason: "x" })).rejects.toBeInstanceOf(
        LedgerReleaseRefusedError,
      )
    }
    expect(await storage.get("r1")).toEqual(before)
    // Text that shows something is kept as given, invisible characters and all.
    const released = await ledger.release("r1", { verified: "not_executed", by: "\u200bops", reason: "x" })
    expect(released.resolvedBy).toBe("\u200bops")
  })

  it("a reconciler's completed() result that is not JSON is recorded as an unstorable result, not thrown bare", async () => {
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({
      storage,
      ...quiet,
      reconciler: { reconcile: () => ReconcileResult.completed(cyclic as never) },
    })
    let runs = 0
    const t = ledger.tool({ name: "t", binding }, async (_a: object, tx) =>
      tx.sideEffect(async () => {
        runs++
        await tx.recordExternalOperation("pi_1")
        throw new Error("boom")
      }),
    )
    await t({}, { requestId: "r2" }).catch(() => {})
    for (let i = 0; i < 2; i++)
      await expect(t({}, { requestId: "r2" })).rejects.toBeInstanceOf(LedgerResultUnstorableError)
    expect(runs).toBe(1)
    expect(await storage.get("r2")).toMatchObject({ terminalOutcome: "COMPLETED", result: null })
  })

  it("waitForTransition refuses NaN and negative seconds without polling", async () => {
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({ storage, ...quiet })
    await ledger.claim({ tool: "t", requestId: "r1" })
    let reads = 0
    const get = storage.get.bind(storage)
    storage.get = (id: string) => {
      reads++
      return get(id)
    }
    for (const options of [{ pollTimeout: Number.NaN }, { pollInterval: Number.NaN }, { pollInterval: -1 }])
      await expect(ledger.waitForTransition("r1", options)).rejects.toBeInstanceOf(LedgerConfigError)
    expect(reads).toBe(0)
  })

  it.each(backends)("claim() without a string tool writes nothing (%s store)", async (_kind, open) => {
    const [storage, other] = open(2) as [LedgerStorage, LedgerStorage]
    const ledger = new ActionLedger({ storage, ...quiet })
    for (const request of [{ requestId: "job-9" }, { requestId: "job-9", tool: 5 }, { tool: "" }, null])
      await expect(ledger.claim(request as never)).rejects.toBeInstanceOf(LedgerConfigError)
    await ledger.claim({ tool: "t", requestId: "ok-1" })
    // Another reader of the same store still reads it (a row without a tool made the file corrupt).
    const rows = []
    for await (const r of other.list()) rows.push(r.requestId)
    expect(rows).toEqual(["ok-1"])
  })
})
