import { describe, expect, it } from "vitest"
import { newEntry } from "../../../src/adapter-kit.ts"
import {
  ActionLedger,
  type ActionLedgerOptions,
  argsFingerprint,
  LedgerAlreadyResolvedError,
  type LedgerEntry,
  LedgerError,
  LedgerHardBlockError,
  LedgerIdentityConflictError,
  LedgerOutcomeAlreadySetError,
  LedgerPollTimeoutError,
  LedgerReleaseRefusedError,
  LedgerSoftBlockError,
  type LedgerStorage,
  LedgerStorageUnavailableError,
  LedgerWorkerAliveError,
  MemoryLedgerStorage,
  MissingRequestIdentityError,
  ReconcileResult,
  type SideEffectClass,
  ToolTransitionBinding,
  transitionKey,
} from "../../../src/core/index.ts"
import { TaskLedger } from "../../../src/core/tasks/index.ts"
import { RemoteLedger } from "../../../src/edge/client.ts"
import { ManualClock } from "../../../src/testing.ts"
import { writePythonFailures } from "./python-failures.ts"
import { expectRenewals } from "./renewals.ts"

const quiet = { onWarning: () => {} }
const bind = (sideEffectClass: SideEffectClass) => ({
  agentId: "payment-agent",
  policyVersion: "2026.07.1",
  sideEffectClass,
})
const tick = () => new Promise((r) => setTimeout(r, 0))

/** Counts storage calls (a wrapper: the memory store's private fields forbid subclass-by-prototype tricks). */
function counting(inner: MemoryLedgerStorage) {
  const counts = { claim: 0, cas: 0, get: 0 }
  const storage: LedgerStorage = {
    get: (id) => {
      counts.get++
      return inner.get(id)
    },
    set: (e) => inner.set(e),
    tryClaimInflight: (e, ttl, now, o) => {
      counts.claim++
      return inner.tryClaimInflight(e, ttl, now, o)
    },
    tryTransition: (n, e) => {
      counts.cas++
      return inner.tryTransition(n, e)
    },
    list: (o) => inner.list(o),
    findByDispatchId: (d) => inner.findByDispatchId(d),
  }
  return { storage, counts }
}

/** Resolves when `n` bodies have started; lets a test hold bodies open. */
function gate() {
  let open!: () => void
  const opened = new Promise<void>((r) => {
    open = r
  })
  return { open, opened }
}

describe("redispatch of one keyed_mutate call", () => {
  it("100 concurrent calls with one toolCallId run the body once; all get the same result", async () => {
    const ledger = new ActionLedger({ pollInterval: 0.001, ...quiet })
    let runs = 0
    const hold = gate()
    const pay = ledger.tool(
      { name: "send_payment", binding: bind("keyed_mutate") },
      async (args: { amount: number }, tx) =>
        tx.sideEffect(async () => {
          runs++
          await hold.opened
          return { id: `pi_${runs}`, amount: args.amount }
        }),
    )
    // Half arrive while the first is in flight (they poll), half after it completed (they get the stored row).
    const during = Array.from({ length: 50 }, () => pay({ amount: 100 }, { toolCallId: "call_abc" }))
    await tick()
    const [row] = await ledger.listTransitions()
    expect(row?.terminalOutcome).toBe("IN_FLIGHT")
    hold.open()
    const first = await Promise.all(during)
    const after = await Promise.all(
      Array.from({ length: 50 }, () => pay({ amount: 100 }, { toolCallId: "call_abc" })),
    )
    expect(runs).toBe(1)
    for (const r of [...first, ...after]) expect(r).toEqual({ id: "pi_1", amount: 100 })
    const rows = await ledger.listTransitions()
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({
      terminalOutcome: "COMPLETED",
      fence: 1,
      sideEffectBoundary: "crossed",
      effectPhase: "COMMITTED",
    })
  })

  it("returns copies: a caller mutating its result cannot change what others replay", async () => {
    const ledger = new ActionLedger(quiet)
    const t = ledger.tool({ name: "t", binding: bind("keyed_mutate") }, async () => ({ n: 1 }))
    const a = await t({}, { toolCallId: "x" })
    a.n = 99
    const b = await t({}, { toolCallId: "x" })
    b.n = 42
    expect(await t({}, { toolCallId: "x" })).toEqual({ n: 1 })
  })
})

describe("crash inside sideEffect(), hard block, operator release", () => {
  it("lists a failure 'before the effect' on a crossed-over row as stuck, as the gate hard-blocks it", async () => {
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({ ...quiet, storage, leaseRenewInterval: 0 })
    const binding = bind("keyed_mutate")
    await writePythonFailures(
      storage,
      [
        ["before", "not_crossed"],
        ["maybe", "maybe_crossed"],
        ["after", "crossed"],
      ],
      binding,
    )
    const stuck = await ledger.listTransitions({ stuck: true })
    // Rows started in one clock tick list in store order: compare as a set.
    expect(stuck.map((r) => [r.requestId, r.terminalOutcome, r.sideEffectBoundary]).sort()).toEqual([
      ["after", "FAILED_BEFORE_EFFECT", "crossed"],
      ["maybe", "FAILED_BEFORE_EFFECT", "maybe_crossed"],
    ])
    const runs = { n: 0 }
    const pay = ledger.tool({ name: "pay", binding }, async () => ++runs.n)
    for (const id of ["maybe", "after"]) {
      await expect(pay({}, { requestId: id })).rejects.toBeInstanceOf(LedgerHardBlockError)
    }
    expect(await pay({}, { requestId: "before" })).toBe(1)
    await ledger.release("maybe", { verified: "not_executed", by: "ops", reason: "no charge at the gateway" })
    expect(await pay({}, { requestId: "maybe" })).toBe(2)
    expect((await ledger.listTransitions({ stuck: true })).map((r) => r.requestId)).toEqual(["after"])
  })

  it("UNKNOWN → hard block → release not_executed → exactly one re-execution → RETURN", async () => {
    const ledger = new ActionLedger(quiet)
    let runs = 0
    const pay = ledger.tool(
      { name: "send_payment", binding: bind("keyed_mutate") },
      async (_a: { amount: number }, tx) =>
        tx.sideEffect(async () => {
          runs++
          if (runs === 1) throw new Error("gateway timeout")
          return { id: "pi_2" }
        }),
    )
    await expect(pay({ amount: 5 }, { toolCallId: "c1" })).rejects.toThrow("gateway timeout")
    const [row] = await ledger.listTransitions({ stuck: true })
    expect(row).toMatchObject({
      terminalOutcome: "UNKNOWN",
      sideEffectBoundary: "maybe_crossed",
      error: "Error: gateway timeout",
    })
    const err = await pay({ amount: 5 }, { toolCallId: "c1" }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LedgerHardBlockError)
    expect((err as Error).message).toBe(
      `Side-effecting tool 'send_payment' request '${row?.requestId}' is UNKNOWN with boundary maybe_crossed; manual reconciliation required`,
    )
    expect(runs).toBe(1)

    const id = row?.requestId as string
    await expect(
      ledger.release(id, { verified: "not_executed", by: "", reason: "x" }),
    ).rejects.toBeInstanceOf(LedgerReleaseRefusedError)
    const released = await ledger.release(id, {
      verified: "not_executed",
      by: "ops@acme",
      reason: "gateway shows no charge",
    })
    expect(released).toMatchObject({ operatorResolution: "not_executed", releasedFromOutcome: "UNKNOWN" })
    await expect(
      ledger.release(id, { verified: "not_executed", by: "ops", reason: "again" }),
    ).rejects.toBeInstanceOf(LedgerAlreadyResolvedError)
    // Concurrent redispatches after the release: exactly one re-execution.
    const results = await Promise.all(
      Array.from({ length: 10 }, () => pay({ amount: 5 }, { toolCallId: "c1" })),
    )
    expect(runs).toBe(2)
    for (const r of results) expect(r).toEqual({ id: "pi_2" })
    expect(await ledger.get(id)).toMatchObject({
      terminalOutcome: "COMPLETED",
      resolvedBy: "ops@acme",
      operatorResolution: null,
      // 1 the first claim, 2 the release (one-shot: it moves the fence), 3 the one re-execution.
      fence: 3,
    })
    expect(await pay({ amount: 5 }, { toolCallId: "c1" })).toEqual({ id: "pi_2" })
    expect(runs).toBe(2)
  })

  it("release completed stores the operator's result for later calls", async () => {
    const ledger = new ActionLedger(quiet)
    const t = ledger.tool({ name: "wire", binding: bind("irreversible") }, async (_a, tx) =>
      tx.sideEffect(() => {
        throw new Error("lost")
      }),
    )
    await expect(t({}, { requestId: "wire:1" })).rejects.toThrow("lost")
    await ledger.release("wire:1", {
      verified: "completed",
      result: { tx: "0xabc" },
      by: "ops",
      reason: "on chain",
    })
    expect(await t({}, { requestId: "wire:1" })).toEqual({ tx: "0xabc" })
  })

  it("boundary drives the failure outcome: before → FAILED_BEFORE_EFFECT, after markCrossed → FAILED_AFTER_EFFECT", async () => {
    const ledger = new ActionLedger(quiet)
    const beforeFx = ledger.tool({ name: "b", binding: bind("keyed_mutate") }, async () => {
      throw new TypeError("bad amount")
    })
    await expect(beforeFx({}, { requestId: "b1" })).rejects.toThrow("bad amount")
    expect(await ledger.get("b1")).toMatchObject({
      terminalOutcome: "FAILED_BEFORE_EFFECT",
      error: "TypeError: bad amount",
    })
    const afterFx = ledger.tool({ name: "a", binding: bind("keyed_mutate") }, async (_x, tx) => {
      await tx.sideEffect(async () => "charged")
      throw new Error("parse failed")
    })
    await expect(afterFx({}, { requestId: "a1" })).rejects.toThrow("parse failed")
    expect(await ledger.get("a1")).toMatchObject({
      terminalOutcome: "FAILED_AFTER_EFFECT",
      sideEffectBoundary: "crossed",
    })
    await expect(afterFx({}, { requestId: "a1" })).rejects.toBeInstanceOf(LedgerHardBlockError)
  })

  it("maybe_crossed is durable before the provider call runs", async () => {
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({ storage, ...quiet })
    let seen: LedgerEntry | null = null
    const t = ledger.tool({ name: "t", binding: bind("non_idempotent_mutate") }, async (_a, tx) =>
      tx.sideEffect(async () => {
        seen = await storage.get(tx.requestId)
        return 1
      }),
    )
    await t({}, { requestId: "m1" })
    expect(seen).toMatchObject({ sideEffectBoundary: "maybe_crossed", terminalOutcome: "IN_FLIGHT" })
  })
})

describe("fencing", () => {
  it("a worker whose claim was taken over cannot complete, fail, move the boundary, attach a ref or renew", async () => {
    const clock = new ManualClock()
    const storage = new MemoryLedgerStorage()
    const a = new ActionLedger({ storage, clock, owner: "worker-a", leaseTtl: 30, ...quiet })
    const b = new ActionLedger({ storage, clock, owner: "worker-b", leaseTtl: 30, ...quiet })
    const claim = await a.claim({
      tool: "sync",
      requestId: "r1",
      binding: bind("idempotent_mutate"),
      args: { x: 1 },
    })
    expect(claim.owned).toBe(true)
    const fenceA = claim.entry.fence
    await a.recordDecision(
      "r1",
      { allowed: true, verdicts: [], deniedReasons: [] },
      { fence: fenceA, owner: "worker-a" },
    )
    clock.advance(31)
    const taken = await b.claim({
      tool: "sync",
      requestId: "r1",
      binding: bind("idempotent_mutate"),
      args: { x: 1 },
    })
    expect(taken).toMatchObject({ owned: true, entry: { owner: "worker-b", fence: fenceA + 1 } })
    const guard = { fence: fenceA, owner: "worker-a" }
    const attempts = [
      () => a.complete("r1", "late", guard),
      () => a.fail("r1", "Error: x", guard),
      () => a.markUnknown("r1", "Error: x", guard),
      () => a.markBlocked("r1", "Error: x", guard),
      () => a.advanceBoundary("r1", "maybe_crossed", guard),
      () => a.attachExternalOperationRef("r1", "pi_1", guard),
      () => a.renewLease("r1", guard),
    ]
    // One at a time: Bun fails a test on a rejection left unhandled across a tick, even if awaited later.
    for (const attempt of attempts)
      await expect(attempt()).rejects.toBeInstanceOf(LedgerOutcomeAlreadySetError)
    expect(await storage.get("r1")).toMatchObject({
      owner: "worker-b",
      fence: fenceA + 1,
      terminalOutcome: "IN_FLIGHT",
      externalOperationRef: null,
    })
    await expect(a.complete("r1", 1, undefined as never)).rejects.toThrow("requires the claim fence")
    // The methods that read more of the guard than its fence reject alike, never throw a bare TypeError.
    await expect(a.fail("r1", "e", undefined as never)).rejects.toThrow("requires the claim fence")
    await expect(a.renewLease("r1", undefined as never)).rejects.toThrow("requires the claim fence")
  })

  it("the stale owner's ledger.tool() completion is discarded, and its caller still gets its result", async () => {
    const clock = new ManualClock()
    const storage = new MemoryLedgerStorage()
    const warnings: string[] = []
    const a = new ActionLedger({
      storage,
      clock,
      owner: "a",
      leaseTtl: 10,
      leaseRenewInterval: 0,
      onWarning: (m) => warnings.push(m),
    })
    const b = new ActionLedger({ storage, clock, owner: "b", leaseTtl: 10, ...quiet })
    const hold = gate()
    const body = async () => {
      await hold.opened
      return "from-a"
    }
    const ta = a.tool({ name: "t", binding: bind("read") }, body)
    const pa = ta({ q: 1 }, { requestId: "q1" })
    await tick()
    clock.advance(11)
    const tb = b.tool({ name: "t", binding: bind("read") }, async () => "from-b")
    expect(await tb({ q: 1 }, { requestId: "q1" })).toBe("from-b")
    hold.open()
    expect(await pa).toBe("from-a")
    expect(warnings.some((w) => w.includes("tool result discarded"))).toBe(true)
    expect(await storage.get("q1")).toMatchObject({ result: "from-b", owner: "b" })
  })
})

describe("polling", () => {
  it("a peer past pollTimeout while the lease is held gets LedgerPollTimeoutError and leaves the row alone", async () => {
    const clock = new ManualClock()
    const storage = new MemoryLedgerStorage()
    const owner = new ActionLedger({
      storage,
      clock,
      owner: "owner",
      leaseTtl: 3600,
      leaseRenewInterval: 0,
      ...quiet,
    })
    const peer = new ActionLedger({
      storage,
      clock,
      owner: "peer",
      pollTimeout: 300,
      pollInterval: 10,
      ...quiet,
    })
    let runs = 0
    const hold = gate()
    const body = async () => {
      runs++
      await hold.opened
      return { id: "sub_1" }
    }
    const spec = { name: "subagent_task", binding: bind("non_idempotent_mutate") }
    const running = owner.tool(spec, body)({ task: "analyze" }, { toolCallId: "c9" })
    await tick()
    const err = await peer
      .tool(spec, body)({ task: "analyze" }, { toolCallId: "c9" })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LedgerPollTimeoutError)
    const [row] = await owner.listTransitions()
    expect(row).toMatchObject({ terminalOutcome: "IN_FLIGHT", owner: "owner", fence: 1 })
    hold.open()
    expect(await running).toEqual({ id: "sub_1" })
    expect(await peer.tool(spec, body)({ task: "analyze" }, { toolCallId: "c9" })).toEqual({ id: "sub_1" })
    expect(runs).toBe(1)
  })

  it("an aborted signal stops a poller", async () => {
    const ledger = new ActionLedger({ pollInterval: 0.01, ...quiet })
    const hold = gate()
    const t = ledger.tool({ name: "t", binding: bind("keyed_mutate") }, async () => {
      await hold.opened
      return 1
    })
    const first = t({}, { toolCallId: "s" })
    const ac = new AbortController()
    const second = t({}, { toolCallId: "s", signal: ac.signal })
    ac.abort(new Error("user cancelled"))
    await expect(second).rejects.toThrow("user cancelled")
    hold.open()
    expect(await first).toBe(1)
  })

  it("a signal aborted during the claim keeps the body from starting: the call fails before its effect", async () => {
    const inner = new MemoryLedgerStorage()
    const claiming = gate()
    const release = gate()
    const storage: LedgerStorage = {
      get: (id) => inner.get(id),
      set: (e) => inner.set(e),
      // A slow store: the claim lands after the caller gave up (a framework's tool timeout).
      tryClaimInflight: async (e, ttl, now, o) => {
        claiming.open()
        await release.opened
        return inner.tryClaimInflight(e, ttl, now, o)
      },
      tryTransition: (n, e) => inner.tryTransition(n, e),
      list: (o) => inner.list(o),
      findByDispatchId: (d) => inner.findByDispatchId(d),
    }
    const ledger = new ActionLedger({ storage, ...quiet })
    let runs = 0
    const pay = ledger.tool({ name: "pay", binding: bind("non_idempotent_mutate") }, async () => ++runs)
    const ac = new AbortController()
    const call = pay({ amount: 1 }, { toolCallId: "c1", signal: ac.signal }).catch((e: unknown) => e)
    await claiming.opened
    ac.abort(new Error("timed out"))
    release.open()
    expect(String(await call)).toContain("timed out")
    expect(runs).toBe(0)
    const [row] = await ledger.listTransitions()
    expect(row).toMatchObject({ terminalOutcome: "FAILED_BEFORE_EFFECT", sideEffectBoundary: "not_crossed" })
  })

  it("waitForTransition waits without writing", async () => {
    const ledger = new ActionLedger({ pollInterval: 0.001, ...quiet })
    const hold = gate()
    const t = ledger.tool({ name: "t", binding: bind("keyed_mutate") }, async () => {
      await hold.opened
      return 7
    })
    const p = t({}, { requestId: "w1" })
    await tick()
    const waited = ledger.waitForTransition("w1")
    hold.open()
    expect(await waited).toMatchObject({ terminalOutcome: "COMPLETED", result: 7 })
    await expect(ledger.waitForTransition("nope")).rejects.toThrow("Cannot wait for unknown request 'nope'")
    await p
  })
})

describe("argument types", () => {
  it("a tool, a task and a remote tool may declare their arguments as an interface (npm test type-checks this)", async () => {
    // An interface has no index signature, so `A extends Record<string, unknown>` refused it (TS2345).
    interface PaymentArgs {
      amount: number
      recipient: string
    }
    const ledger = new ActionLedger(quiet)
    const pay = ledger.tool(
      { name: "pay", binding: bind("keyed_mutate") },
      async (a: PaymentArgs) => a.amount,
    )
    const tasks = new TaskLedger({ onWarning: () => {} })
    const report = tasks.task("report", async (a: PaymentArgs) => a.recipient)
    const remote = new RemoteLedger({ baseUrl: "http://edge.test", fetch: async () => new Response(null) })
    const remotePay = remote.tool({ name: "pay" }, async (a: PaymentArgs) => a.amount)
    expect(await pay({ amount: 5, recipient: "acct" }, { toolCallId: "i1" })).toBe(5)
    expect(await report({ amount: 5, recipient: "acct" }, { taskId: "t1" })).toBe("acct")
    expect(typeof remotePay).toBe("function")
  })
})

describe("leases", () => {
  it("auto-renews while the body runs and stops when it ends", async () => {
    // Lease time runs on a manual clock; renewal ticks are real timers. Each step moves the clock 60 % of a lease
    // and waits for a renewal to land, so the test proves renewals without depending on scheduler timing.
    const clock = new ManualClock()
    const { storage, counts } = counting(new MemoryLedgerStorage())
    const ledger = new ActionLedger({
      storage,
      clock,
      leaseTtl: 10,
      leaseRenewInterval: 0.01,
      pollInterval: 0.01,
      ...quiet,
    })
    let runs = 0
    const hold = gate()
    const t = ledger.tool({ name: "slow", binding: bind("non_idempotent_mutate") }, async () => {
      runs++
      await hold.opened
      return "done"
    })
    const first = t({}, { requestId: "slow-1" })
    const start = clock.now()
    await expectRenewals(clock, async () => (await storage.get("slow-1"))?.lastHeartbeatAt, 6, 5)
    // 30 s after the claim, three leases' worth: a peer sees a live transition and waits instead of blocking.
    expect(clock.now() - start).toBe(30)
    expect(await storage.get("slow-1")).toMatchObject({ terminalOutcome: "IN_FLIGHT", fence: 1 })
    const second = t({}, { requestId: "slow-1" })
    hold.open()
    expect(await first).toBe("done")
    expect(await second).toBe("done")
    expect(runs).toBe(1)
    const after = counts.cas
    await new Promise((r) => setTimeout(r, 100))
    expect(counts.cas).toBe(after)
  })

  it("a tool's own lease, shorter than the ledger's renewal interval, is renewed every third of it", async () => {
    // The ledger renews every 1,200 s (a third of its default 3,600 s lease); the tool's lease is 0.03 s. Its
    // renewals used to follow the ledger's interval, so the lease lapsed mid-body and a redispatch took it over.
    const clock = new ManualClock()
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({ storage, clock, pollInterval: 0.01, ...quiet })
    expect(ledger.leaseRenewInterval).toBe(1200)
    let runs = 0
    const hold = gate()
    const t = ledger.tool(
      { name: "slow", binding: bind("non_idempotent_mutate"), leaseTtl: 0.03 },
      async () => {
        runs++
        await hold.opened
        return "done"
      },
    )
    const first = t({}, { requestId: "short-1" })
    await expectRenewals(clock, async () => (await storage.get("short-1"))?.lastHeartbeatAt, 0.02, 5)
    const row = await storage.get("short-1")
    expect(row).toMatchObject({ terminalOutcome: "IN_FLIGHT", fence: 1 })
    expect((row?.leaseUntil ?? 0) - clock.now()).toBeCloseTo(0.03, 6)
    const second = t({}, { requestId: "short-1" })
    hold.open()
    expect(await first).toBe("done")
    expect(await second).toBe("done")
    expect(runs).toBe(1)
  })

  it("a ledger whose lease never lapses renews nothing; a tool's own lease there is renewed by its third", async () => {
    const { storage, counts } = counting(new MemoryLedgerStorage())
    const ledger = new ActionLedger({ storage, leaseTtl: 0, ...quiet })
    expect(ledger.leaseRenewInterval).toBe(Infinity)
    const binding = bind("non_idempotent_mutate")
    const body = async () => {
      await new Promise((r) => setTimeout(r, 150))
      return "done"
    }
    // Before, the default interval was 0.01 s for such a ledger: a 60 s tool lease was renewed 100 times a second.
    const own = ledger.tool({ name: "own", binding, leaseTtl: 60 }, body)
    const unbounded = ledger.tool({ name: "unbounded", binding }, body)
    expect(await own({}, { requestId: "own-1" })).toBe("done")
    expect(await unbounded({}, { requestId: "unbounded-1" })).toBe("done")
    expect(counts.cas).toBe(2) // the two completions, no renewal

    // And a short tool lease there is renewed (every 0.01 s of real time), so it never lapses while its body runs.
    const clock = new ManualClock()
    const rows = new MemoryLedgerStorage()
    const short = new ActionLedger({ storage: rows, clock, leaseTtl: 0, ...quiet })
    const hold = gate()
    const held = short.tool({ name: "short", binding, leaseTtl: 0.03 }, async () => {
      await hold.opened
      return "done"
    })
    const running = held({}, { requestId: "short-1" })
    await expectRenewals(clock, async () => (await rows.get("short-1"))?.lastHeartbeatAt, 0.02, 3)
    hold.open()
    expect(await running).toBe("done")
  })

  it("with the death-signal gate an EXPIRED row waits for evidence; a FAILED retry does not (defect #1)", async () => {
    const clock = new ManualClock()
    const storage = new MemoryLedgerStorage()
    const opts: ActionLedgerOptions = {
      storage,
      clock,
      leaseTtl: 60,
      reclaimRequiresDeathSignal: true,
      presumedDeadAfter: 600,
      pollTimeout: 30,
      pollInterval: 1,
      ...quiet,
    }
    const ledger = new ActionLedger(opts)
    let runs = 0
    let down = true
    const t = ledger.tool({ name: "upsert", binding: bind("idempotent_mutate") }, async () => {
      runs++
      if (down) throw new Error("db down")
      return "ok"
    })
    await expect(t({}, { requestId: "u1" })).rejects.toThrow("db down")
    down = false
    // Retrying a FAILED_BEFORE_EFFECT row is immediate even though the heartbeat is recent.
    expect(await t({}, { requestId: "u1" })).toBe("ok")
    expect(runs).toBe(2)

    await storage.set(
      newEntry(
        {
          requestId: "u2",
          tool: "upsert",
          owner: "gone",
          leaseUntil: clock.now() - 1,
          lastHeartbeatAt: clock.now() - 61,
        },
        clock.now() - 61,
      ),
    )
    await expect(t({}, { requestId: "u2" })).rejects.toBeInstanceOf(LedgerPollTimeoutError)
    await expect(
      ledger.release("u2", { verified: "not_executed", by: "ops", reason: "r" }),
    ).rejects.toBeInstanceOf(LedgerWorkerAliveError)
    await ledger.markWorkerDeadFor("u2", { by: "ops", reason: "pod evicted", overrideHeartbeat: true })
    expect(await t({}, { requestId: "u2" })).toBe("ok")
    expect(runs).toBe(3)
  })
})

describe("identity", () => {
  it("same toolCallId with drifted arguments is refused before the body runs", async () => {
    const ledger = new ActionLedger(quiet)
    let runs = 0
    const t = ledger.tool({ name: "send_email", binding: bind("non_idempotent_mutate") }, async () => ++runs)
    await t({ to: "a@x.com" }, { toolCallId: "tc-7" })
    const err = await t({ to: "b@x.com" }, { toolCallId: "tc-7" }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LedgerIdentityConflictError)
    expect((err as LedgerIdentityConflictError).llmMessage).toContain("Identity conflict: 'send_email'")
    expect(runs).toBe(1)
    const hard = new ActionLedger({ ...quiet, onArgsDrift: "hard", storage: ledger.storage })
    const t2 = hard.tool({ name: "send_email", binding: bind("non_idempotent_mutate") }, async () => ++runs)
    await expect(t2({ to: "c@x.com" }, { toolCallId: "tc-7" })).rejects.toBeInstanceOf(LedgerHardBlockError)
    const off = new ActionLedger({ ...quiet, onArgsDrift: "off", storage: ledger.storage })
    await off.tool({ name: "send_email", binding: bind("non_idempotent_mutate") }, async () => ++runs)(
      { to: "d@x.com" },
      { toolCallId: "tc-7" },
    )
    expect(runs).toBe(2)
  })

  it("an explicit request id reused with other arguments is always a conflict", async () => {
    const ledger = new ActionLedger({ ...quiet, onArgsDrift: "off" })
    const t = ledger.tool(
      { name: "charge", binding: bind("keyed_mutate") },
      async (a: { amount: number }) => a.amount,
    )
    await t({ amount: 1 }, { requestId: "order-1" })
    await expect(t({ amount: 2 }, { requestId: "order-1" })).rejects.toBeInstanceOf(
      LedgerIdentityConflictError,
    )
    expect(await t({ amount: 1 }, { requestId: "order-1" })).toBe(1)
  })

  it("requestIdFrom names the transition by a business key; require_explicit refuses derived ids", async () => {
    const ledger = new ActionLedger({ ...quiet, requestIdentityPolicy: "require_explicit" })
    const t = ledger.tool(
      { name: "refund", binding: { ...bind("keyed_mutate"), requestIdFrom: "orderId" } },
      async (a: { orderId?: string }) => a.orderId,
    )
    expect(await t({ orderId: " o-9 " })).toBe(" o-9 ")
    expect(await ledger.get("refund:orderId:o-9")).not.toBeNull()
    await expect(t({})).rejects.toBeInstanceOf(MissingRequestIdentityError)
    const u = ledger.tool({ name: "charge", binding: bind("keyed_mutate") }, async () => 1)
    await expect(u({}, { toolCallId: "tc" })).rejects.toThrow(/require_explicit/)
    const r = ledger.tool({ name: "search", binding: bind("read") }, async () => "hits")
    expect(await r({ q: "x" })).toBe("hits")
    expect((await ledger.listTransitions()).map((e) => e.tool).sort()).toEqual(["refund", "search"])
  })

  it("metadata never reaches the tool and is stored as the original's bookkeeping kwargs", async () => {
    const ledger = new ActionLedger(quiet)
    let seen: unknown
    const t = ledger.tool({ name: "t", binding: bind("read") }, async (a) => {
      seen = a
      return 1
    })
    await t({ q: 1 }, { toolCallId: "c", threadId: "th", runId: "ru", node: "n1" })
    expect(seen).toEqual({ q: 1 })
    const [row] = await ledger.listTransitions()
    expect(row?.kwargs).toEqual({ q: 1, tool_call_id: "c", thread_id: "th", run_id: "ru", node: "n1" })
  })
})

describe("classes and policies", () => {
  it("a read that is UNKNOWN re-runs (soft block), or defers when configured", async () => {
    const storage = new MemoryLedgerStorage()
    await storage.set(
      newEntry(
        {
          requestId: "s1",
          tool: "search",
          terminalOutcome: "UNKNOWN",
          status: "failed",
          fence: 2,
          kwargs: { request_id: "s1" },
          // Claimed by this read tool: a read binding does not soft-block a row someone else claimed.
          effectProtocolRequired: true,
          effectId: transitionKey({
            tool: "search",
            binding: ToolTransitionBinding.from(bind("read")),
            argsFingerprint: argsFingerprint({}),
            dispatchId: "s1",
          }),
        },
        1,
      ),
    )
    const defer = new ActionLedger({ storage, deferReadOnlyUnknown: true, ...quiet })
    const body = async () => "fresh"
    await expect(
      defer.tool({ name: "search", binding: bind("read") }, body)({}, { requestId: "s1" }),
    ).rejects.toBeInstanceOf(LedgerSoftBlockError)
    const ledger = new ActionLedger({ storage, ...quiet })
    expect(await ledger.tool({ name: "search", binding: bind("read") }, body)({}, { requestId: "s1" })).toBe(
      "fresh",
    )
    expect(await storage.get("s1")).toMatchObject({ terminalOutcome: "COMPLETED", fence: 3 })
  })

  it("unclassified tools dedupe by toolCallId, poll live rows and refuse ambiguous ones (defect #18)", async () => {
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({ storage, pollInterval: 0.001, ...quiet })
    let runs = 0
    const t = ledger.tool({ name: "legacy" }, async () => ++runs)
    const [a, b] = await Promise.all([t({}, { toolCallId: "L1" }), t({}, { toolCallId: "L1" })])
    expect([a, b, runs]).toEqual([1, 1, 1])
    await storage.set(
      newEntry({ requestId: "L2", tool: "legacy", terminalOutcome: "UNKNOWN", status: "failed" }, 1),
    )
    await expect(t({}, { toolCallId: "L2" })).rejects.toBeInstanceOf(LedgerHardBlockError)
    await ledger.release("L2", {
      verified: "not_executed",
      by: "ops",
      reason: "never reached the mail server",
    })
    expect(await t({}, { toolCallId: "L2" })).toBe(2)
    expect(await t({}, { toolCallId: "L2" })).toBe(2)
    const strict = new ActionLedger({ storage, unclassifiedPolicy: "strict", ...quiet })
    await storage.set(
      newEntry(
        { requestId: "L3", tool: "legacy", terminalOutcome: "FAILED_BEFORE_EFFECT", status: "failed" },
        1,
      ),
    )
    await expect(
      strict.tool({ name: "legacy" }, async () => 1)({}, { toolCallId: "L3" }),
    ).rejects.toBeInstanceOf(LedgerHardBlockError)
  })

  it("predicates deny before any claim, so a corrected retry with the same id runs (defect #3)", async () => {
    const ledger = new ActionLedger({
      ...quiet,
      predicates: [
        {
          name: "max_amount",
          check: (i) =>
            (i.args.amount as number) <= 100 ? true : { allowed: false, reason: "amount over limit" },
        },
      ],
    })
    const t = ledger.tool(
      { name: "pay", binding: bind("keyed_mutate") },
      async (a: { amount: number }) => a.amount,
    )
    await expect(t({ amount: 500 }, { requestId: "p1" })).rejects.toThrow(
      "decision denied for 'p1': amount over limit",
    )
    expect(await ledger.get("p1")).toBeNull()
    expect(await t({ amount: 50 }, { requestId: "p1" })).toBe(50)
    expect((await ledger.get("p1"))?.decision).toEqual({
      allowed: true,
      verdicts: [{ name: "max_amount", allowed: true, reason: null }],
      deniedReasons: [],
    })
  })

  it("a reconciler settles UNKNOWN rows: COMPLETED returns the provider's result, NOT_EXECUTED re-runs once", async () => {
    const verdicts: Record<string, ReconcileResult> = {
      pi_done: ReconcileResult.completed({ id: "pi_done", status: "succeeded" }),
      pi_none: ReconcileResult.notExecuted(),
    }
    const ledger = new ActionLedger({
      ...quiet,
      reconciler: { reconcile: (e) => verdicts[e.externalOperationRef ?? ""] ?? ReconcileResult.unknown() },
    })
    let runs = 0
    const t = ledger.tool(
      { name: "charge", binding: bind("non_idempotent_mutate") },
      async (a: { ref: string }, tx) =>
        tx.sideEffect(async () => {
          await tx.recordExternalOperation(a.ref)
          runs++
          if (runs <= 3) throw new Error("socket hang up")
          return { id: a.ref, status: "ran" }
        }),
    )
    for (const ref of ["pi_done", "pi_none", "pi_unknown"])
      await expect(t({ ref }, { requestId: ref })).rejects.toThrow("socket hang up")
    expect(await t({ ref: "pi_done" }, { requestId: "pi_done" })).toEqual({
      id: "pi_done",
      status: "succeeded",
    })
    expect(await t({ ref: "pi_none" }, { requestId: "pi_none" })).toEqual({ id: "pi_none", status: "ran" })
    const err = await t({ ref: "pi_unknown" }, { requestId: "pi_unknown" }).catch((e: unknown) => e)
    expect((err as Error).message).toContain("(external_operation_ref='pi_unknown')")
    expect(runs).toBe(4)
  })
})

describe("storage outage", () => {
  it("fails closed: LedgerStorageUnavailableError and the body never runs", async () => {
    let up = true
    const inner = new MemoryLedgerStorage()
    const flaky = new Proxy(inner, {
      get(target, prop, recv) {
        const v = Reflect.get(target, prop, recv)
        if (typeof v !== "function") return v
        return (...args: unknown[]) => {
          if (!up) return Promise.reject(new Error("ECONNREFUSED 127.0.0.1:6379"))
          return v.apply(target, args)
        }
      },
    })
    const ledger = new ActionLedger({ storage: flaky, ...quiet })
    let runs = 0
    const t = ledger.tool({ name: "pay", binding: bind("keyed_mutate") }, async () => ++runs)
    up = false
    const err = await t({}, { toolCallId: "o1" }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LedgerStorageUnavailableError)
    expect(err).toBeInstanceOf(LedgerError)
    expect((err as Error).message).toBe(
      "ledger storage unavailable during try_claim_inflight: Error: ECONNREFUSED 127.0.0.1:6379",
    )
    expect(runs).toBe(0)
    up = true
    expect(await t({}, { toolCallId: "o1" })).toBe(1)
    expect(await t({}, { toolCallId: "o1" })).toBe(1)
  })
})

describe("happy-path write budget", () => {
  it("one claim and one completion write; sideEffect() adds one boundary write", async () => {
    const { storage, counts } = counting(new MemoryLedgerStorage())
    const ledger = new ActionLedger({ storage, ...quiet })
    await ledger.tool({ name: "plain", binding: bind("keyed_mutate") }, async () => 1)(
      {},
      { toolCallId: "h1" },
    )
    expect(counts).toEqual({ claim: 1, cas: 1, get: 0 })
    await ledger.tool({ name: "fx", binding: bind("keyed_mutate") }, async (_a, tx) =>
      tx.sideEffect(() => 2),
    )({}, { toolCallId: "h2" })
    expect(counts).toEqual({ claim: 2, cas: 3, get: 0 })
  })
})
