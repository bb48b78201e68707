// A hostile review of the task ledger: bodies that throw garbage or return what JSON cannot hold, operators who send
// wrong fields, callers who craft arguments so two different tasks share one request id, and cancellation.

import { describe, expect, it } from "vitest"
import type { ReceiptHook } from "../../../src/core/index.ts"
import {
  deriveTaskRequestId,
  MemoryTaskStore,
  type TaskContext,
  TaskIdAmbiguousError,
  TaskLeaseLostError,
  TaskLedger,
  TaskLedgerError,
  type TaskLedgerOptions,
  TaskLedgerPendingError,
  TaskReceiptUnsignedError,
  TaskReleaseRefusedError,
  type TaskStore,
} from "../../../src/tasks.ts"
import { ManualClock } from "../../../src/testing.ts"

const ledgerOn = (extra: TaskLedgerOptions = {}) =>
  new TaskLedger({ storage: new MemoryTaskStore(), leaseRenewInterval: 0, onWarning: () => {}, ...extra })

describe("a body that throws something that is not an Error", () => {
  for (const [name, make] of [
    ["an object without a prototype", () => Object.create(null)],
    [
      "an object whose toString throws",
      () => ({
        toString() {
          throw new Error("no")
        },
      }),
    ],
  ] as const) {
    it(`${name}: the task is recorded failed (not left in flight) and a retry runs it`, async () => {
      const clock = new ManualClock()
      const ledger = ledgerOn({ clock, leaseTtl: 3600 })
      let runs = 0
      const t = ledger.task("flaky", async () => {
        if (++runs === 1) throw make()
        return "ok"
      })
      await expect(t({ n: 1 })).rejects.toBeDefined()
      const [row] = await ledger.list()
      expect(row?.row.status).toBe("failed")
      expect(typeof row?.row.error).toBe("string")
      // No lease expiry needed: a failed task re-runs at once.
      await expect(t({ n: 1 })).resolves.toBe("ok")
      expect(runs).toBe(2)
    })
  }
})

const cyclic = () => {
  const o: Record<string, unknown> = { n: 1 }
  o.self = o
  return o
}

describe("results that are not JSON", () => {
  it("a cyclic result: the caller gets a TaskLedgerError, the row is not left in flight, a retry runs again", async () => {
    const ledger = ledgerOn({ clock: new ManualClock(), leaseTtl: 3600 })
    let runs = 0
    const t = ledger.task("report", async () => (++runs === 1 ? cyclic() : { n: 2 }))
    const err = await t({ day: "d" }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TaskLedgerError)
    const [stored] = await ledger.list()
    expect(stored?.row.status).toBe("failed")
    expect(stored?.row.error).toMatch(/not JSON/)
    await expect(t({ day: "d" })).resolves.toEqual({ n: 2 })
    expect(runs).toBe(2)
  })

  it("bigint, functions, undefined and Maps are stored as the original's default=str would, and replay as stored", async () => {
    const ledger = ledgerOn()
    let runs = 0
    const fn = () => 1
    const t = ledger.task("odd", async () => {
      runs++
      return { big: 2n ** 70n, small: 5n, fn, u: undefined, m: new Map([[1, 2]]), nan: Number.NaN }
    })
    const first = await t({})
    const again = await t({})
    expect(runs).toBe(1)
    expect(typeof first.fn).toBe("function") // the caller that ran it gets its own value back
    expect(again).toEqual({
      big: "1180591620717411303424",
      small: 5,
      // The function's source text, as the runtime gives it (Deno's transpiler writes "()=>1").
      fn: String(fn),
      m: "[object Map]",
      nan: "NaN",
    })
  })

  it("an operator release with a cyclic result is refused with a typed error and leaves the task as it was", async () => {
    const clock = new ManualClock()
    const ledger = ledgerOn({ clock, leaseTtl: 10 })
    const t = ledger.task("stuck", async () => new Promise<never>(() => {}))
    void t({}, { taskId: "T-1" })
    await new Promise((r) => setTimeout(r, 0))
    clock.advance(11)
    const before = await ledger.get("T-1")
    const err = await ledger
      .release("T-1", { verified: "completed", result: cyclic(), by: "ops", reason: "checked" })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TaskLedgerError)
    expect((await ledger.get("T-1"))?.version).toBe(before?.version)
  })
})

describe("operator release with wrong or missing fields", () => {
  const bad: Array<[string, unknown]> = [
    ["no options", undefined],
    ["by is a number", { verified: "not_executed", by: 42, reason: "r" }],
    ["reason is an object", { verified: "not_executed", by: "ops", reason: { x: 1 } }],
    ["verified is missing", { by: "ops", reason: "r" }],
    ["verified is a prototype-less object", { verified: Object.create(null), by: "ops", reason: "r" }],
    ["by is blank", { verified: "not_executed", by: "  ", reason: "r" }],
  ]
  for (const [name, options] of bad) {
    it(`${name}: TaskReleaseRefusedError, and the task is untouched`, async () => {
      const clock = new ManualClock()
      const ledger = ledgerOn({ clock, leaseTtl: 10 })
      const t = ledger.task("stuck", async () => new Promise<never>(() => {}))
      void t({}, { taskId: "T-2" })
      await new Promise((r) => setTimeout(r, 0))
      clock.advance(11)
      const before = await ledger.get("T-2")
      const err = await ledger.release("T-2", options as never).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(TaskReleaseRefusedError)
      expect((await ledger.get("T-2"))?.version).toBe(before?.version)
    })
  }
})

describe("concurrency and cancellation", () => {
  it("40 concurrent callers with wait: true: the body runs once and every caller gets its result", async () => {
    const ledger = ledgerOn({ pollInterval: 0.001 })
    let runs = 0
    const t = ledger.task({ name: "once", wait: true }, async (args: { k: string }) => {
      runs++
      await new Promise((r) => setTimeout(r, 20))
      return { k: args.k, run: runs }
    })
    const results = await Promise.all(Array.from({ length: 40 }, () => t({ k: "x" })))
    expect(runs).toBe(1)
    for (const r of results) expect(r).toEqual({ k: "x", run: 1 })
  })

  it("a caller that aborts mid-body: the body sees the abort, the task is failed, and a retry runs it once more", async () => {
    const ledger = ledgerOn()
    let runs = 0
    const t = ledger.task("abortable", async (_a: object, ctx) => {
      runs++
      if (runs > 1) return "second"
      await new Promise((_, reject) =>
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true }),
      )
      return "never"
    })
    const ac = new AbortController()
    const p = t({}, { signal: ac.signal })
    setTimeout(() => ac.abort("user left"), 5)
    await expect(p).rejects.toBe("user left")
    expect((await ledger.list())[0]?.row.status).toBe("failed")
    await expect(t({})).resolves.toBe("second")
    expect(runs).toBe(2)
  })

  it("a caller whose signal is already aborted claims nothing", async () => {
    const ledger = ledgerOn()
    let runs = 0
    const t = ledger.task("x", async () => ++runs)
    await expect(t({}, { signal: AbortSignal.abort("gone") })).rejects.toBe("gone")
    expect(await ledger.list()).toHaveLength(0)
    expect(runs).toBe(0)
  })
})

describe("ledger options a typo can make dangerous", () => {
  const bad: Array<[string, TaskLedgerOptions]> = [
    ["leaseTtl NaN (was: an unbounded lease, so a crash strands the task forever)", { leaseTtl: Number.NaN }],
    ["leaseTtl Infinity (stored as null: unbounded)", { leaseTtl: Number.POSITIVE_INFINITY }],
    ["leaseRenewInterval NaN", { leaseRenewInterval: Number.NaN }],
    ["pollInterval negative", { pollInterval: -1 }],
    ["pollInterval NaN (a busy poll)", { pollInterval: Number.NaN }],
    ["pollTimeout NaN", { pollTimeout: Number.NaN }],
  ]
  for (const [name, options] of bad)
    it(`${name}: refused when the ledger is built`, () => {
      expect(() => new TaskLedger(options)).toThrow(/must be/)
    })

  it("a task's own leaseTtl is checked too", () => {
    expect(() => new TaskLedger().task({ name: "t", leaseTtl: Number.NaN }, async () => 1)).toThrow(/must be/)
  })
})

describe("request ids a caller can forge through id_from values", () => {
  const idFrom = ["region", "day"]
  it("a value holding ':<field>=' is refused instead of taking another argument set's id", async () => {
    expect(() => deriveTaskRequestId({ task: "t", kwargs: { region: "eu:day=2026-12-01" }, idFrom })).toThrow(
      TaskIdAmbiguousError,
    )
    expect(() =>
      deriveTaskRequestId({ task: "t", kwargs: { region: "eu", day: "x:region=us" }, idFrom }),
    ).toThrow(TaskIdAmbiguousError)
    // Through the wrapper: the victim's task runs and stores its result; the forged call gets an error, not it.
    const ledger = ledgerOn()
    const report = ledger.task({ name: "report", idFrom }, async (a: Record<string, unknown>) => ({ for: a }))
    await report({ region: "eu", day: "2026-12-01" })
    await expect(report({ region: "eu:day=2026-12-01" })).rejects.toBeInstanceOf(TaskIdAmbiguousError)
    expect(await ledger.list()).toHaveLength(1)
  })

  it("values with ':' or '=' that cannot forge a field keep the original's id", () => {
    expect(
      deriveTaskRequestId({ task: "t", kwargs: { region: "a=b", day: "2026-12-01T10:00:00" }, idFrom }),
    ).toBe("t:region=a=b:day=2026-12-01T10:00:00")
  })

  it("a null task_id or run_id is no id (the original's 'None' would be one id for every such call)", () => {
    const kw = { task_id: null, run_id: null, region: "eu" }
    expect(deriveTaskRequestId({ task: "t", kwargs: kw, idFrom })).toBe("t:region=eu")
    const hashed = deriveTaskRequestId({ task: "t", kwargs: kw })
    expect(hashed).toMatch(/^t:[0-9a-f]{16}$/)
    expect(hashed).not.toBe(deriveTaskRequestId({ task: "t", kwargs: { ...kw, region: "us" } }))
  })

  it("a live task answers the original's pending message, naming the task and the request id", async () => {
    const ledger = ledgerOn()
    let release!: () => void
    const t = ledger.task("nightly", () => new Promise<number>((r) => (release = () => r(1))))
    const first = t({}, { taskId: "T-1" })
    await new Promise((r) => setTimeout(r, 5))
    const err = await t({}, { taskId: "T-1" }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TaskLedgerPendingError)
    expect((err as TaskLedgerPendingError).message).toMatch(
      /^Task 'nightly' request 'T-1' is already in-flight /,
    )
    expect(err).toMatchObject({ code: "task_ledger_pending", requestId: "T-1" })
    release()
    expect(await first).toBe(1)
  })

  it("an id_from field named like an Object.prototype member counts only when the caller passed it", () => {
    const id = deriveTaskRequestId({ task: "t", kwargs: { day: "d" }, idFrom: ["constructor", "day"] })
    expect(id).toBe("t:day=d")
  })
})

describe("a store outage while a long body runs", () => {
  it("renewals that fail until the lease would lapse abort the body's signal before another worker can take over", async () => {
    const clock = new ManualClock()
    const inner = new MemoryTaskStore()
    let down = false
    const storage: TaskStore = {
      get: (id) => inner.get(id),
      list: () => inner.list(),
      swap: async (id, expected, next) => {
        if (down) throw new Error("store unreachable")
        return inner.swap(id, expected, next)
      },
    }
    const ledger = new TaskLedger({
      storage,
      clock,
      leaseTtl: 30,
      leaseRenewInterval: 10,
      onWarning: () => {},
    })
    let ctxOf!: TaskContext
    let finish!: () => void
    const gate = new Promise<void>((r) => {
      finish = r
    })
    const t = ledger.task("long", async (_a: object, ctx) => {
      ctxOf = ctx
      await gate
      return "done"
    })
    const p = t({}).catch((e: unknown) => e)
    while (!ctxOf) await new Promise((r) => setTimeout(r, 1))
    down = true
    clock.advance(5)
    await expect(ctxOf.renewLease()).rejects.toThrow("store unreachable")
    expect(ctxOf.signal.aborted).toBe(false) // 25 s of lease left: the next renewal may still succeed
    clock.advance(15)
    await expect(ctxOf.renewLease()).rejects.toBeDefined()
    // 10 s left, and the next renewal is 10 s away: the lease cannot be proven past it, so the body must stop now.
    expect(ctxOf.signal.aborted).toBe(true)
    expect(ctxOf.signal.reason).toBeInstanceOf(TaskLeaseLostError)
    finish()
    await p
  })
})

describe("a signer outage when the body has finished", () => {
  const failingSigner = (): ReceiptHook => ({
    sign: async () => {
      throw new Error("KMS unreachable")
    },
    append: async () => undefined,
  })

  it("records the outcome without a receipt, so a later call replays it instead of running the body again", async () => {
    const clock = new ManualClock()
    const ledger = ledgerOn({ clock, leaseTtl: 60, receipts: failingSigner() })
    let runs = 0
    const charge = ledger.task("charge", async () => {
      runs++
      return { charged: 100 }
    })
    const err = await charge({}, { taskId: "c1" }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TaskReceiptUnsignedError)
    expect((err as TaskReceiptUnsignedError).code).toBe("task_receipt_unsigned")
    expect((err as Error).message).toContain("KMS unreachable")
    const rec = await ledger.get("c1")
    expect(rec?.row.status).toBe("completed")
    expect(rec?.lease?.receipt_ref ?? null).toBeNull()
    clock.advance(3600) // well past the lease: before, the row was still in flight here and the body ran again
    await expect(charge({}, { taskId: "c1" })).resolves.toEqual({ charged: 100 })
    expect(runs).toBe(1)
  })

  it("a failed body is recorded failed (not left in flight for its lease), and the body's own error reaches the caller", async () => {
    const warnings: string[] = []
    const ledger = new TaskLedger({
      storage: new MemoryTaskStore(),
      leaseRenewInterval: 0,
      leaseTtl: 3600,
      receipts: failingSigner(),
      onWarning: (m) => warnings.push(m),
    })
    let runs = 0
    const t = ledger.task("flaky", async () => {
      if (++runs === 1) throw new RangeError("upstream 502")
      return "ok"
    })
    await expect(t({}, { taskId: "f1" })).rejects.toThrow("upstream 502")
    expect((await ledger.get("f1"))?.row.status).toBe("failed")
    expect(warnings.join("\n")).toContain("is recorded as failed, but its receipt could not be signed")
    await expect(t({}, { taskId: "f1" })).rejects.toBeInstanceOf(TaskReceiptUnsignedError)
    expect(runs).toBe(2)
  })
})
