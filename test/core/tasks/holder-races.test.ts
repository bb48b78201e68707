// Who holds a task while its body runs: a renewal that hangs, a re-claim by the Python original, an unbounded lease
// an operator would release, a caller that gave up during the claim, and what an operator's release receipt says.
// Runtime-neutral (memory stores, timers only).
import { describe, expect, it } from "vitest"
import { hmacReceiptSigner, MemoryReceiptStore, ReceiptEmitter } from "../../../src/receipts.ts"
import {
  MemoryTaskStore,
  type TaskContext,
  TaskLeaseLostError,
  TaskLedger,
  TaskLedgerPendingError,
  TaskReleaseRefusedError,
  TaskResultUnstorableError,
  type TaskStore,
} from "../../../src/tasks.ts"
import { ManualClock } from "../../../src/testing.ts"
import { expectRenewals } from "../ledger/renewals.ts"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const until = async (ok: () => boolean) => {
  while (!ok()) await sleep(1)
}

describe("a lease renewal that never answers", () => {
  it("aborts ctx.signal before the lease lapses, so a worker taking the task over never runs beside it", async () => {
    const shared = new MemoryTaskStore()
    let partitioned = false
    const hang = new Promise<never>(() => {})
    // Worker a's connection: once partitioned, every call hangs (no reply, no driver timeout).
    const viewA: TaskStore = {
      get: (id) => (partitioned ? hang : shared.get(id)),
      swap: (id, e, n) => (partitioned ? hang : shared.swap(id, e, n)),
      list: () => shared.list(),
    }
    const quiet = { leaseTtl: 0.3, onWarning: () => {} }
    const a = new TaskLedger({ storage: viewA, owner: "a", ...quiet })
    const b = new TaskLedger({ storage: shared, owner: "b", ...quiet })
    const running = new Set<string>()
    let overlap = false
    let ctxA!: TaskContext
    const body = (who: string) => async (_: object, ctx: TaskContext) => {
      if (who === "a") ctxA = ctx
      running.add(who)
      for (let i = 0; i < 20 && !ctx.signal.aborted; i++) {
        if (running.size > 1) overlap = true
        await sleep(25)
      }
      running.delete(who)
      return who
    }
    void a
      .task("charge", body("a"))({}, { taskId: "T" })
      .catch(() => {})
    await until(() => !!ctxA)
    partitioned = true // the first renewal (at 0.1 s) hangs
    await sleep(450) // a's lease (0.3 s) has lapsed by now
    expect(ctxA.signal.aborted).toBe(true)
    expect(ctxA.signal.reason).toBeInstanceOf(TaskLeaseLostError)
    await expect(b.task("charge", body("b"))({}, { taskId: "T" })).resolves.toBe("b")
    expect(overlap).toBe(false)
  })
})

describe("a store that times out while a body runs past its lease", () => {
  it("renews one at a time and not after the lapse: the call fails one store timeout after the body", async () => {
    // A renewal per tick queued on the serial chain, each waiting out the driver's timeout, and renewals went on
    // after the lease lapsed: a 6 s body with a 2 s timeout rejected after 27 s.
    const shared = new MemoryTaskStore()
    let stalled = false
    let swaps = 0
    const log: string[] = []
    const store: TaskStore = {
      get: (id) => shared.get(id),
      swap: async (id, e, n) => {
        if (!stalled) return shared.swap(id, e, n)
        swaps++
        log.push("swap")
        await sleep(250) // the driver's timeout
        log.push("timed out")
        throw new Error("timed out")
      },
      list: () => shared.list(),
    }
    const ledger = new TaskLedger({ storage: store, leaseTtl: 0.3, onWarning: () => {} })
    let bodyEnd = 0
    let duringBody = 0
    const t = ledger.task("report", async () => {
      stalled = true
      await sleep(1000) // ignores ctx.signal
      duringBody = swaps
      log.push("body end")
      bodyEnd = Date.now()
      return 1
    })
    const failure = t({}, { taskId: "S" }).finally(() => log.push("rejected"))
    await expect(failure).rejects.toMatchObject({ code: "task_store_unavailable" })
    // The order, not the clock, shows it failed one store timeout after the body: a backlog of renewals would put
    // their swaps between the body's end and the completion's. The bound only catches a call that hangs.
    expect(log.slice(log.indexOf("body end"))).toEqual(["body end", "swap", "timed out", "rejected"])
    expect(Date.now() - bodyEnd).toBeLessThan(5_000)
    // One renewal (later ticks found it in flight, then the lease lapsed), then the completion.
    expect(duringBody).toBeLessThanOrEqual(1)
    expect(swaps - duringBody).toBe(1)
  })

  it("skips a tick while the last renewal is still waiting, so none is queued behind it", async () => {
    const shared = new MemoryTaskStore()
    let stalled = false
    let swaps = 0
    const store: TaskStore = {
      get: (id) => shared.get(id),
      swap: async (id, e, n) => {
        if (stalled) swaps++
        if (stalled) await sleep(600) // slow, not down: it answers
        return shared.swap(id, e, n)
      },
      list: () => shared.list(),
    }
    // Renewals at 0.4 s (answered at 1.0 s, before the 1.2 s lease lapses) and 0.8 s (in flight: skipped).
    const ledger = new TaskLedger({ storage: store, leaseTtl: 1.2, onWarning: () => {} })
    const t = ledger.task("report", async () => {
      stalled = true
      await sleep(900)
      return 1
    })
    await expect(t({}, { taskId: "Q" })).resolves.toBe(1)
    expect(swaps).toBe(2) // the renewal at 0.4 s and the completion
  })
})

describe("renewals that answer", () => {
  it("never abort the body, also with a renewal interval over half the lease", async () => {
    // Lease time runs on a manual clock, renewal ticks are real timers: by a real clock a tick 0.1 s late lapsed the
    // lease on a loaded machine. Each step moves the clock one interval on and waits for the renewal stamped then, so
    // a lapse watch armed too early (a margin of a whole interval) still finds the lease lapsed and aborts the body.
    const clock = new ManualClock()
    const storage = new MemoryTaskStore()
    const ledger = new TaskLedger({
      storage,
      clock,
      leaseTtl: 0.4,
      leaseRenewInterval: 0.3,
      onWarning: () => {},
    })
    let ctx: TaskContext | undefined
    let finish!: () => void
    const done = new Promise<void>((r) => {
      finish = r
    })
    const call = ledger.task("long", async (_: object, c: TaskContext) => {
      ctx = c
      await done
      return c.signal.aborted ? "aborted" : "done"
    })({}, { taskId: "L" })
    await until(() => !!ctx)
    await expectRenewals(clock, async () => (await storage.get("L"))?.lease?.heartbeat_at, 0.3, 3)
    finish()
    await expect(call).resolves.toBe("done")
  })
})

describe("a task the Python original re-claimed after an operator released it", () => {
  it("is never adopted by the stale worker: its completion is refused and the original's claim stands", async () => {
    const store = new MemoryTaskStore()
    const warnings: string[] = []
    const stale = new TaskLedger({
      storage: store,
      owner: "ts-a",
      leaseTtl: 60,
      onWarning: (m) => warnings.push(m),
    })
    let ctxA!: TaskContext
    let finish!: () => void
    const gate = new Promise<void>((r) => {
      finish = r
    })
    const call = stale.task("report", async (_: object, ctx: TaskContext) => {
      ctxA = ctx
      await gate
      return { by: "a" }
    })({}, { taskId: "T-py" })
    await until(() => !!ctxA)
    const ops = new TaskLedger({ storage: store, owner: "ops" })
    await ops.release("T-py", { verified: "not_executed", by: "ops", reason: "looked dead", force: true })
    // The original claims the failed row: a new in-flight row; it knows nothing of the lease kept beside it.
    const released = await store.get("T-py")
    if (!released) throw new Error("released row missing")
    const pyRow = {
      ...released.row,
      status: "in-flight" as const,
      error: null,
      started_at: released.row.started_at + 1,
      finished_at: null,
    }
    expect(await store.swap("T-py", released.version, { row: pyRow, lease: released.lease })).not.toBeNull()

    await expect(ctxA.renewLease()).rejects.toBeInstanceOf(TaskLeaseLostError)
    expect(ctxA.signal.aborted).toBe(true)
    finish()
    await expect(call).resolves.toEqual({ by: "a" })
    expect(warnings.join("\n")).toContain("was not recorded")
    expect((await store.get("T-py"))?.row).toEqual(pyRow)
  })
})

describe("a task the Python original re-claimed over our lapsed lease", () => {
  it("is held by the original: a call here is pending and does not run the body", async () => {
    const store = new MemoryTaskStore()
    let t = 1_000
    const opts = {
      storage: store,
      clock: { now: () => t },
      leaseTtl: 60,
      leaseRenewInterval: 0,
      onWarning: () => {},
    }
    let runs = 0
    // A worker claims and dies mid-run; its lease lapses at t = 1060.
    void new TaskLedger({ ...opts, owner: "dead" }).task("pay", () => {
      runs++
      return new Promise(() => {})
    })({}, { taskId: "T-py" })
    await until(() => runs === 1)
    // The original (its row key expired) claims the task again: a newer in-flight row beside our lapsed lease.
    t = 2_000
    const cur = await store.get("T-py")
    if (!cur?.lease) throw new Error("claim missing")
    const pyRow = { ...cur.row, started_at: t }
    expect(await store.swap("T-py", cur.version, { row: pyRow, lease: cur.lease })).not.toBeNull()
    t = 2_001
    const pay = new TaskLedger(opts).task("pay", async () => ++runs)
    await expect(pay({}, { taskId: "T-py" })).rejects.toBeInstanceOf(TaskLedgerPendingError)
    expect(runs).toBe(1)
    expect((await store.get("T-py"))?.row).toEqual(pyRow)
  })
})

describe("an operator's release whose write loses to a worker's re-claim", () => {
  it("is refused, not reported done: the worker's run stands", async () => {
    const inner = new MemoryTaskStore()
    let race: (() => Promise<void>) | null = null
    // The worker's re-claim lands between the operator's read and its compare-and-swap.
    const storage: TaskStore = {
      get: (id) => inner.get(id),
      list: () => inner.list(),
      async swap(id, e, n) {
        const r = race
        race = null
        await r?.()
        return inner.swap(id, e, n)
      },
    }
    const worker = new TaskLedger({ storage: inner, owner: "worker", onWarning: () => {} })
    let runs = 0
    const pay = worker.task("pay", async () => {
      if (++runs === 1) throw new Error("upstream 503")
      await sleep(20)
      return { run: runs }
    })
    await expect(pay({}, { taskId: "P" })).rejects.toThrow("upstream 503")
    let retry: Promise<unknown> | null = null
    race = async () => {
      retry = pay({}, { taskId: "P" })
      await until(() => runs === 2)
    }
    const ops = new TaskLedger({ storage, owner: "ops" })
    const why = {
      verified: "completed",
      result: { by_hand: true },
      by: "ops",
      reason: "charged by hand",
    } as const
    await expect(ops.release("P", why)).rejects.toMatchObject({ code: "task_release_refused" })
    await expect(retry).resolves.toEqual({ run: 2 })
    expect((await inner.get("P"))?.row).toMatchObject({ status: "completed", result: { run: 2 } })
  })
})

describe("a task held under an unbounded lease (leaseTtl <= 0)", () => {
  it("is live while its worker runs it: a release without force is refused, with force it goes through", async () => {
    const store = new MemoryTaskStore()
    const warnings: string[] = []
    const w = new TaskLedger({ storage: store, owner: "w", leaseTtl: 0, onWarning: (m) => warnings.push(m) })
    const ops = new TaskLedger({ storage: store, owner: "ops" })
    let runs = 0
    let signal!: AbortSignal
    const job = w.task("import", async (_: object, ctx) => {
      runs++
      signal = ctx.signal
      await sleep(60)
      return "done"
    })
    const first = job({}, { taskId: "U" })
    await sleep(10)
    const why = { verified: "not_executed", by: "ops", reason: "looks stuck" } as const
    const refused = await ops.release("U", why).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(TaskReleaseRefusedError)
    expect((refused as Error).message).toContain("lease until released; pass force: true")
    await expect(job({}, { taskId: "U" })).rejects.toThrow("lease until released")
    await ops.release("U", { ...why, force: true })
    await expect(first).resolves.toBe("done")
    expect(runs).toBe(1)
    // Its completion was refused: what the body left running on ctx.signal stops (it did not, when the body had
    // returned before any renewal found the task released).
    expect(signal.aborted).toBe(true)
    expect(signal.reason).toBeInstanceOf(TaskLeaseLostError)
    // The worker's lease never lapsed: its warning must not say so.
    expect(warnings.join("\n")).toContain("was taken over or released")
    expect(warnings.join("\n")).not.toContain("lapsed")
  })
})

describe("a holder whose outcome is refused because the task was released meanwhile", () => {
  /** A task the operator releases (forced, not_executed) while its body runs `ending`, then ends. */
  async function releasedWhileRunning(id: string, ending: () => unknown) {
    const store = new MemoryTaskStore()
    const w = new TaskLedger({ storage: store, owner: "w", leaseTtl: 0, onWarning: () => {} })
    const ops = new TaskLedger({ storage: store, owner: "ops" })
    let signal!: AbortSignal
    const job = w.task("import", async (_: object, ctx) => {
      signal = ctx.signal
      await sleep(60)
      return ending()
    })
    const first = job({}, { taskId: id })
    first.catch(() => {})
    await sleep(10)
    await ops.release(id, { verified: "not_executed", by: "ops", reason: "stuck", force: true })
    return { store, first, signal: () => signal }
  }

  it("has ctx.signal aborted after a failure too, so nothing it left running goes on", async () => {
    const { first, signal: seen } = await releasedWhileRunning("F", () => {
      throw new Error("feed timed out")
    })
    await expect(first).rejects.toThrow("feed timed out")
    const signal = seen()
    expect(signal.aborted).toBe(true)
    expect(signal.reason).toBeInstanceOf(TaskLeaseLostError)
  })

  it("has ctx.signal aborted after a result it cannot store too (its failure is refused the same way)", async () => {
    const {
      store,
      first,
      signal: seen,
    } = await releasedWhileRunning("C", () => {
      const cycle: Record<string, unknown> = {}
      cycle.self = cycle
      return cycle
    })
    await expect(first).rejects.toBeInstanceOf(TaskResultUnstorableError)
    const signal = seen()
    expect(signal.aborted).toBe(true)
    expect(signal.reason).toBeInstanceOf(TaskLeaseLostError)
    // The release stands: the refused failure wrote nothing over it.
    expect((await store.get("C"))?.row.status).toBe("failed")
  })
})

describe("a caller that aborts while the claim is being written", () => {
  it("never gets its body run: the task is recorded failed and a retry runs it once", async () => {
    class SlowStore extends MemoryTaskStore {
      override async swap(...args: Parameters<MemoryTaskStore["swap"]>) {
        await sleep(30)
        return super.swap(...args)
      }
    }
    const tasks = new TaskLedger({ storage: new SlowStore(), onWarning: () => {} })
    let runs = 0
    const pay = tasks.task("pay", async () => ++runs)
    const ac = new AbortController()
    const p = pay({ amount: 5 }, { taskId: "P", signal: ac.signal })
    setTimeout(() => ac.abort("caller gave up"), 5)
    await expect(p).rejects.toBe("caller gave up")
    expect(runs).toBe(0)
    expect((await tasks.get("P"))?.row.status).toBe("failed")
    await expect(pay({ amount: 5 }, { taskId: "P" })).resolves.toBe(1)
  })
})

describe("an operator's release receipt", () => {
  it("carries the error the row held before the release: null for a task released from in flight", async () => {
    const rs = new MemoryReceiptStore()
    const receipts = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store: rs, agentId: "a" })
    const store = new MemoryTaskStore()
    const w = new TaskLedger({ storage: store, receipts, leaseTtl: 60, leaseRenewInterval: 0 })
    void w.task("job", () => new Promise(() => {}))({}, { taskId: "J" })
    await sleep(10)
    const ops = new TaskLedger({ storage: store, receipts })
    await ops.release("J", { verified: "not_executed", by: "ops", reason: "host lost", force: true })
    const r = (await rs.list()).at(-1)
    expect(r?.outputs).toMatchObject({ operator_release: true, released_from_outcome: "in-flight" })
    expect(r?.error).toBeNull()
    // The row itself still says why it failed, for the original's readers.
    expect((await store.get("J"))?.row.error).toBe("released as not executed by ops: host lost")
  })
})
