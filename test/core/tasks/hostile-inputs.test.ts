// The task ledger against a hostile caller and a careless user: exact numbers a model's JSON carries, errors whose
// text cannot be made, leases no Date holds, and nesting deeper than the stores (and the original) keep.

import { describe, expect, it } from "vitest"
import { ActionLedger, LedgerConfigError } from "../../../src/core/index.ts"
import {
  MemoryTaskStore,
  TaskLedger,
  type TaskLedgerOptions,
  TaskLedgerPendingError,
  TaskReleaseRefusedError,
  TaskResultUnstorableError,
} from "../../../src/tasks.ts"
import { ManualClock } from "../../../src/testing.ts"
import { parseToolArguments } from "../../../src/tools.ts"

const ledgerOn = (extra: TaskLedgerOptions = {}) =>
  new TaskLedger({ storage: new MemoryTaskStore(), leaseRenewInterval: 0, onWarning: () => {}, ...extra })

const ids = async (ledger: TaskLedger) => (await ledger.list()).map((t) => t.row.request_id)

describe("request ids of exact numbers (a bigint, a float parseToolArguments kept) are the original's", () => {
  // TaskLedger().derive_request_id("t", (), json.loads(text)) and f"t:n={n}" in Python 3.11 (json.dumps(sort_keys=True,
  // default=str)), run on 2026-12-06.
  it.each([
    ['{"n": 1152921504606846976}', null, "t:9cb6c3e008078731"],
    ['{"n": 9007199254740993}', null, "t:b6c7a5f2cabc5824"],
    ['{"n": -9007199254740993}', null, "t:50e5572888185dcc"],
    ['{"n": 123456789012345678901234567890}', null, "t:7b77fb2aceca7fdc"],
    ['{"n": 1e16}', null, "t:840f31a6c22b939c"],
    ['{"n": 9007199254740993.0}', null, "t:5fb35e464b07c0f9"],
    ['{"n": 1e16}', ["n"], "t:n=1e+16"],
    [
      '{"n": [1, 1e16, 9007199254740993, "it\'s", "\\u00a0\\u00ad\\u007f\\u2028"]}',
      ["n"],
      `t:n=[1, 1e+16, 9007199254740993, "it's", '\\xa0\\xad\\x7f\\u2028']`,
    ],
    ['{"run_id": 1e16}', null, "t:1e+16"],
    ['{"task_id": 1e16}', null, "1e+16"],
  ] as const)("%s (id_from %j) is %s", async (text, idFrom, id) => {
    const ledger = ledgerOn()
    const t = ledger.task({ name: "t", ...(idFrom && { idFrom }) }, async () => 1)
    await t(parseToolArguments(text))
    expect(await ids(ledger)).toEqual([id])
  })

  it("a bigint and the string of its digits are two tasks: each runs, neither replays the other's result", async () => {
    const ledger = ledgerOn()
    let runs = 0
    const t = ledger.task("t", async (a: { n: unknown }) => {
      runs++
      return typeof a.n
    })
    // The same number as Python's int 2**60 and as the text "1152921504606846976" (json.dumps quotes it).
    await expect(t({ n: 2n ** 60n })).resolves.toBe("bigint")
    await expect(t({ n: "1152921504606846976" })).resolves.toBe("string")
    expect(runs).toBe(2)
    expect(await ids(ledger)).toEqual(["t:9cb6c3e008078731", "t:2ce88bc14bfbc358"])
    // The row keeps what JSON holds (the digits), as before.
    expect((await ledger.list())[0]?.row.kwargs).toEqual({ n: "1152921504606846976" })
  })
})

describe("a body that throws an Error whose text cannot be made", () => {
  const symbolMessage = () => Object.assign(new Error("x"), { message: Symbol("s") })
  const throwingName = () => {
    const e = new Error("y")
    Object.defineProperty(e, "name", {
      get() {
        throw new Error("no name")
      },
    })
    return e
  }
  it.each([
    ["a Symbol message", symbolMessage],
    ["a name getter that throws", throwingName],
  ])("%s: recorded failed (not in flight for the lease), the caller gets its own error", async (_, make) => {
    const warnings: string[] = []
    const ledger = ledgerOn({ leaseTtl: 0, onWarning: (m) => warnings.push(m) })
    let runs = 0
    const thrown = make()
    const t = ledger.task("t", async () => {
      if (++runs === 1) throw thrown
      return "ok"
    })
    await expect(t({})).rejects.toBe(thrown)
    const [row] = await ledger.list()
    expect(row?.row.status).toBe("failed")
    expect(typeof row?.row.error).toBe("string")
    expect(warnings).toEqual([])
    // An unbounded lease: left in flight, only a forced release would have freed it.
    await expect(t({})).resolves.toBe("ok")
    expect(runs).toBe(2)
  })
})

describe("the action ledger shares the failure text (errorText)", () => {
  it("a tool throwing an Error with a Symbol message: the caller gets that error, the row is not left in flight", async () => {
    const ledger = new ActionLedger({ onWarning: () => {}, pollTimeout: 0 })
    const thrown = Object.assign(new Error("x"), { message: Symbol("s") })
    let runs = 0
    const send = ledger.tool({ name: "send" }, async () => {
      runs++
      throw thrown
    })
    await expect(send({ a: 1 }, { requestId: "r1" })).rejects.toBe(thrown)
    // In flight, the retry polled until LedgerPollTimeoutError; recorded failed before any effect, it runs again.
    await expect(send({ a: 1 }, { requestId: "r1" })).rejects.toBe(thrown)
    expect(runs).toBe(2)
  })
})

describe("a lease whose end no Date holds", () => {
  it("a leaseTtl of 1e300: the next caller gets TaskLedgerPendingError, a release TaskReleaseRefusedError", async () => {
    const clock = new ManualClock()
    const ledger = ledgerOn({ clock, leaseTtl: 1e300 })
    let release: () => void = () => {}
    const t = ledger.task("t", () => new Promise<number>((r) => (release = () => r(1))))
    const first = t({})
    await clock.sleep(0)
    const err = await t({}).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TaskLedgerPendingError)
    expect((err as Error).message).toContain("lease until 1e+300)")
    const [id] = await ids(ledger)
    await expect(
      ledger.release(id as string, { verified: "not_executed", by: "ops", reason: "test" }),
    ).rejects.toBeInstanceOf(TaskReleaseRefusedError)
    release()
    await expect(first).resolves.toBe(1)
  })
})

describe("nesting deeper than the stores and the original keep", () => {
  const nested = (depth: number) => {
    let v: unknown = 1
    for (let i = 0; i < depth; i++) v = [v]
    return v
  }

  // 4000 deep: toJsonValue converted it, then the store's canonical JSON overflowed the stack; Python's json reads
  // nothing past ~1000, so 1000 would have made a shared task file unreadable to the original.
  it.each([1000, 4000])(
    "a result %i deep is recorded failed (not in flight) and a retry runs it",
    async (depth) => {
      const ledger = ledgerOn({ leaseTtl: 0 })
      let runs = 0
      const t = ledger.task("t", async () => (++runs === 1 ? nested(depth) : "ok"))
      await expect(t({})).rejects.toBeInstanceOf(TaskResultUnstorableError)
      expect((await ledger.list()).map((r) => r.row.status)).toEqual(["failed"])
      await expect(t({})).resolves.toBe("ok")
      expect(runs).toBe(2)
    },
  )

  it.each([1000, 4000])("arguments %i deep are LedgerConfigError and claim nothing", async (depth) => {
    const ledger = ledgerOn()
    let runs = 0
    const plain = ledger.task("t", async () => ++runs)
    const keyed = ledger.task({ name: "k", idFrom: ["x"] }, async () => ++runs)
    await expect(plain({ x: nested(depth) })).rejects.toBeInstanceOf(LedgerConfigError)
    // Not "a cycle or too deep to hash": 1000 hashes, and a task that ran with it before the limit reads this.
    if (depth === 1000) await expect(plain({ x: nested(depth) })).rejects.toThrow(/nested deeper than 900:/)
    await expect(keyed({ x: nested(depth) })).rejects.toBeInstanceOf(LedgerConfigError)
    expect(runs).toBe(0)
    expect(await ledger.list()).toEqual([])
  })

  it("a release result too deep is refused and changes nothing", async () => {
    const ledger = ledgerOn()
    const t = ledger.task("t", async () => {
      throw new Error("failed")
    })
    await expect(t({})).rejects.toThrow("failed")
    const [before] = await ledger.list()
    await expect(
      ledger.release(before?.row.request_id as string, {
        verified: "completed",
        result: nested(4000),
        by: "ops",
        reason: "test",
      }),
    ).rejects.toBeInstanceOf(TaskReleaseRefusedError)
    expect(await ledger.list()).toEqual([before])
  })

  it("the limit is 900 levels exactly, for results and for arguments", async () => {
    const ledger = ledgerOn()
    const t = ledger.task("t", async (a: { d: number }) => nested(a.d))
    await expect(t({ d: 900 })).resolves.toEqual(nested(900))
    await expect(t({ d: 901 })).rejects.toBeInstanceOf(TaskResultUnstorableError)
    const args = ledger.task("a", async () => 1)
    await expect(args({ x: nested(899) })).resolves.toBe(1)
    await expect(args({ x: nested(900) })).rejects.toBeInstanceOf(LedgerConfigError)
  })

  it("900 deep still runs and replays", async () => {
    const ledger = ledgerOn()
    let runs = 0
    const t = ledger.task("t", async () => {
      runs++
      return nested(898)
    })
    await t({ x: nested(898) })
    await expect(t({ x: nested(898) })).resolves.toEqual(nested(898))
    expect(runs).toBe(1)
  })
})

describe("call metadata and options a JavaScript caller may pass", () => {
  it("null metadata is no metadata, as for a ledgered tool: the task runs and replays", async () => {
    const ledger = ledgerOn()
    let runs = 0
    const task = ledger.task("t", async () => ++runs)
    expect(await task({}, null as never)).toBe(1)
    expect(await task({}, null as never)).toBe(1)
    expect(runs).toBe(1)
  })

  it("a taskId or runId that is an object (a cycle overflowed the stack) is InvalidOptionError; nothing is claimed", async () => {
    const ledger = ledgerOn()
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const task = ledger.task("t", async () => 1)
    for (const meta of [{ taskId: cyclic }, { runId: cyclic }, { taskId: ["T-1"] }])
      await expect(task({}, meta as never)).rejects.toMatchObject({ code: "invalid_option" })
    expect(await ids(ledger)).toEqual([])
    // A number names the request as Python's str() does.
    expect(await task({}, { taskId: 42 as never })).toBe(1)
    expect(await ids(ledger)).toEqual(["42"])
  })

  it("an idFrom entry that is not a field name is refused when the task is made", () => {
    const ledger = ledgerOn()
    for (const idFrom of [["a", Symbol("b")], ["a", ""], [1]])
      expect(() => ledger.task({ name: "t", idFrom: idFrom as never }, async () => 1)).toThrow(
        expect.objectContaining({ code: "invalid_option" }),
      )
  })
})

describe("a released task", () => {
  it("a second release before the task runs again is refused and changes nothing; after a run it is released again", async () => {
    const ledger = ledgerOn()
    let fail = true
    const task = ledger.task("t", async () => {
      if (fail) throw new Error("down")
      return "ran"
    })
    await expect(task({}, { taskId: "T-1" })).rejects.toThrow("down")
    const first = await ledger.release("T-1", { verified: "not_executed", by: "alice", reason: "host lost" })
    await expect(
      ledger.release("T-1", { verified: "completed", result: 7, by: "bob", reason: "ran by hand" }),
    ).rejects.toThrow(TaskReleaseRefusedError)
    expect((await ledger.get("T-1"))?.lease).toEqual(first.lease)
    await expect(task({}, { taskId: "T-1" })).rejects.toThrow("down")
    await ledger.release("T-1", { verified: "not_executed", by: "bob", reason: "again" })
    fail = false
    expect(await task({}, { taskId: "T-1" })).toBe("ran")
  })

  // trim() keeps format characters: a zero-width space passed as who released a task and why.
  it("a 'by' or 'reason' of only invisible characters is refused and changes nothing", async () => {
    const ledger = ledgerOn()
    await expect(
      ledger.task("t", async () => {
        throw new Error("down")
      })({}, { taskId: "T-2" }),
    ).rejects.toThrow("down")
    const before = await ledger.get("T-2")
    for (const invisible of ["\u200b", "\u2060\ufeff", "\u200b \n"])
      for (const who of [
        { by: invisible, reason: "x" },
        { by: "ops", reason: invisible },
      ])
        await expect(ledger.release("T-2", { verified: "not_executed", ...who })).rejects.toThrow(
          TaskReleaseRefusedError,
        )
    expect(await ledger.get("T-2")).toEqual(before)
  })
})
