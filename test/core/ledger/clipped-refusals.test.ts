// The refusals the first clipping pass left quoting an id whole: the stores' limits and text checks, the repair
// loop's LedgerRowError, the operator and fenced-method texts, the receipt errors and the task ledger's. A 1 MB
// requestIdFrom argument or task_id made each of them 1 MB; they quote the id clipped, and the rows, keys and the
// errors' own id fields keep it whole.
import { describe, expect, it } from "vitest"
import { keepableJson, refuseUnkeepableClaim } from "../../../src/adapter-kit.ts"
import { HttpLedgerStorage } from "../../../src/adapters/http.ts"
import { UpstashLedgerStorage, UpstashReplyError } from "../../../src/adapters/upstash.ts"
import { UpstashTaskStore } from "../../../src/adapters/upstash-tasks.ts"
import {
  ActionLedger,
  type JsonValue,
  LedgerConfigError,
  type LedgerEntry,
  LedgerLeaseError,
  LedgerOutcomeAlreadySetError,
  LedgerPollTimeoutError,
  LedgerReceiptUnsignedError,
  LedgerReleaseRefusedError,
  LedgerRowError,
  LedgerUnknownRequestError,
  MemoryLedgerStorage,
  ReceiptAppendError,
  type TransitionExpectation,
} from "../../../src/core/index.ts"
import {
  MemoryTaskStore,
  TaskIdAmbiguousError,
  TaskLedger,
  TaskLedgerPendingError,
  TaskReceiptUnsignedError,
  TaskReleaseRefusedError,
  type TaskStore,
} from "../../../src/tasks.ts"
import { ManualClock } from "../../../src/testing.ts"
import { runTag, upstashClient } from "../../adapters/servers/env.ts"

const value = `o-1${"x".repeat(1024 * 1024)}`
const id = `pay:orderId:${value}`
/** An id as the messages quote it: its first 300 characters, then `...`. */
const shown = (s: string) => `${s.slice(0, 300)}...`
const binding = {
  agentId: "billing",
  policyVersion: "1",
  sideEffectClass: "keyed_mutate",
  requestIdFrom: "orderId",
} as const
const quiet = { onWarning: () => {} }

const failure = (p: Promise<unknown>): Promise<Error> =>
  p.then(
    () => {
      throw new Error("expected a refusal")
    },
    (e: unknown) => e as Error,
  )

/** Under 2,000 characters (before: over 1 MB), quoting `quoted` (the clipped id in its context) exactly once. */
function expectClipped(e: unknown, quoted: string) {
  const message = (e as Error).message
  expect(message.length).toBeLessThan(2000)
  expect(message.split(quoted)).toHaveLength(2)
}

function setup(options: ConstructorParameters<typeof ActionLedger>[0] = {}) {
  const storage = options.storage ?? new MemoryLedgerStorage()
  const ledger = new ActionLedger({ storage, ...quiet, ...options })
  let runs = 0
  const pay = ledger.tool({ name: "pay", binding }, async (_a: { orderId: string; n?: unknown }) => ++runs)
  return { storage, ledger, pay, runs: () => runs }
}

describe("a store's refusal of a row quotes the id clipped", () => {
  it("the claim's limits: too big for a store's max_row_bytes (a Durable Object's 2 MB), nothing claimed", () => {
    const entry = { requestId: id, tool: "pay", kwargs: { orderId: value } } as unknown as LedgerEntry
    const e = (() => {
      try {
        refuseUnkeepableClaim(entry, { maxRowBytes: 2_000_000 })
      } catch (err) {
        return err
      }
    })()
    expect(e).toBeInstanceOf(LedgerConfigError)
    expectClipped(e, `request '${shown(id)}': its arguments are too deep or too big for this store`)
    expect((e as Error).message).toMatch(
      /max_row_bytes 2000000 less room for an error\); nothing was claimed$/,
    )
  })

  it("text a store cannot keep (U+0000)", () => {
    expect(() => keepableJson('"\\u0000"', id)).toThrow(LedgerConfigError)
    const e = (() => {
      try {
        keepableJson('"\\u0000"', id)
      } catch (err) {
        return err
      }
    })()
    expectClipped(e, `request '${shown(id)}': the row holds U+0000 or an unpaired surrogate`)
    expect(keepableJson('"ok"', id)).toBe('"ok"')
  })

  it("Upstash: a NUL in the argument and arguments too deep, refused before the body runs; then a reply error", async () => {
    const storage = new UpstashLedgerStorage({ redis: upstashClient(), prefix: `${runTag("clip")}:action:` })
    const { ledger, pay, runs } = setup({ storage })
    const nul = await failure(pay({ orderId: `${value}\u0000` }))
    expect(nul).toBeInstanceOf(LedgerConfigError)
    expectClipped(nul, `request '${shown(id)}': the row holds U+0000`)
    let deep: JsonValue = 1
    for (let i = 0; i < 1000; i++) deep = [deep]
    const tooDeep = await failure(pay({ orderId: value, n: deep }))
    expect(tooDeep).toBeInstanceOf(LedgerConfigError)
    expectClipped(tooDeep, `request '${shown(id)}': its arguments are too deep or too big`)
    expect([runs(), await ledger.get(`${id}\u0000`), await ledger.get(id)]).toEqual([0, null, null])
    // set() of a row past the scripts' depth: refused typed, nothing written.
    const row = { ...(await ledger.claim({ tool: "t", args: {}, meta: { requestId: "r" } })).entry }
    const setDeep = await failure(storage.set({ ...row, requestId: id, result: deep }))
    expectClipped(setDeep, `request '${shown(id)}': the row is too deep for this store (max_depth 900)`)
    expect(await storage.get(id)).toBeNull()
    const reply = new UpstashReplyError("claim", [value])
    expect(reply.message).toBe(`unexpected reply from Redis during claim: ${shown(JSON.stringify([value]))}`)
    expect(new UpstashReplyError("get", undefined).message).toBe(
      "unexpected reply from Redis during get: undefined",
    )
  })

  it("the HTTP store: an id holding an unpaired surrogate, refused before any request", async () => {
    let requests = 0
    const storage = new HttpLedgerStorage({
      url: "http://ledger.test",
      fetch: async () => {
        requests++
        return new Response("{}")
      },
    })
    const { pay, runs } = setup({ storage })
    const claim = await failure(pay({ orderId: `${value}\ud800` }))
    expect(claim).toBeInstanceOf(LedgerConfigError)
    expectClipped(claim, `request '${shown(id)}': the row holds U+0000 or an unpaired surrogate`)
    const row = (await new ActionLedger(quiet).claim({ tool: "pay", args: { orderId: value }, binding }))
      .entry
    // Over the API's 512 characters, it is refused for its length first (the server would answer 400).
    const set = await failure(storage.set({ ...row, requestId: `${id}\ud800` }))
    expect(set).toBeInstanceOf(LedgerConfigError)
    expectClipped(set, `request '${shown(id)}' is over the 512 characters the ledger API takes`)
    const short = `${id.slice(0, 500)}\ud800`
    const surrogate = await failure(storage.set({ ...row, requestId: short }))
    expect(surrogate).toBeInstanceOf(LedgerConfigError)
    expect((surrogate as Error).message).toContain("holds an unpaired surrogate, which the API cannot keep")
    expect([runs(), requests]).toEqual([0, 0])
  })
})

class RefusingStorage extends MemoryLedgerStorage {
  refuse = false
  override async tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean> {
    return this.refuse ? false : super.tryTransition(next, expect)
  }
}

describe("the ledger's own refusals quote the id clipped", () => {
  it("a repair the store refuses (LedgerRowError)", async () => {
    const storage = new RefusingStorage()
    const { ledger, pay, runs } = setup({ storage, pollTimeout: 1 })
    const c = await ledger.claim({
      tool: "pay",
      args: { orderId: value },
      binding,
      decision: { allowed: true, verdicts: [], deniedReasons: [] },
    })
    expect(c.entry.requestId).toBe(id)
    await storage.set({ ...c.entry, sideEffectBoundary: null as never, fence: c.entry.fence + 1 })
    storage.refuse = true
    const e = await failure(pay({ orderId: value }))
    expect(e).toBeInstanceOf(LedgerRowError)
    expectClipped(e, `The store refuses every repair of request '${shown(id)}': repair or delete its row`)
    expect(runs()).toBe(0)
  })

  it("operator actions and waits on an id with no row", async () => {
    const { ledger } = setup()
    const release = await failure(ledger.release(id, { verified: "not_executed", by: "ops", reason: "gone" }))
    expect(release).toBeInstanceOf(LedgerReleaseRefusedError)
    expectClipped(release, `Cannot release request '${shown(id)}': no such request`)
    const dead = await failure(ledger.markWorkerDeadFor(id, { by: "ops", reason: "gone" }))
    expectClipped(dead, `Cannot mark worker dead for request '${shown(id)}': no such request`)
    const wait = await failure(ledger.waitForTransition(id))
    expect(wait).toBeInstanceOf(LedgerUnknownRequestError)
    expectClipped(wait, `Cannot wait for unknown request '${shown(id)}'`)
    const complete = await failure(ledger.complete(id, 1, { fence: 1 }))
    expect(complete).toBeInstanceOf(LedgerUnknownRequestError)
    expectClipped(complete, `Cannot complete unknown request '${shown(id)}': claim it first`)
  })

  it("a wait that timed out, a stale fence, a lapsed lease; the row keeps the whole id", async () => {
    const clock = new ManualClock()
    const { ledger } = setup({ clock, leaseTtl: 10 })
    const c = await ledger.claim({ tool: "pay", args: { orderId: value }, binding })
    const wait = await failure(ledger.waitForTransition(id, { pollTimeout: 0 }))
    expect(wait).toBeInstanceOf(LedgerPollTimeoutError)
    expectClipped(wait, `Timed out waiting for request '${shown(id)}'`)
    const stale = await failure(ledger.markUnknown(id, "x", { fence: c.entry.fence + 1 }))
    expect(stale).toBeInstanceOf(LedgerOutcomeAlreadySetError)
    expectClipped(stale, `Cannot mark unknown request '${shown(id)}': stored outcome is IN_FLIGHT`)
    clock.advance(11)
    const lapsed = await failure(ledger.renewLease(id, { fence: c.entry.fence, owner: c.entry.owner }))
    expect(lapsed).toBeInstanceOf(LedgerLeaseError)
    expectClipped(lapsed, `Cannot renew request '${shown(id)}': lease already expired`)
    expect((await ledger.get(id))?.requestId).toBe(id)
  })

  it("the warning of a result the store cannot keep", async () => {
    const warnings: string[] = []
    const storage = new MemoryLedgerStorage({ limits: { maxRowBytes: 4_000_000 } })
    const ledger = new ActionLedger({ storage, onWarning: (w) => warnings.push(w) })
    const pay = ledger.tool({ name: "pay", binding }, async () => "y".repeat(3_000_000))
    await pay({ orderId: value })
    const stored = warnings.filter((w) => w.includes("was not stored"))
    expect(stored).toHaveLength(1)
    expectClipped({ message: stored[0] }, `the result of 'pay' request '${shown(id)}' was not stored`)
  })

  it("the receipt errors: the message clipped, the requestId field whole", () => {
    const cause = new Error("signer down")
    for (const e of [
      new ReceiptAppendError(id, "rc-1", cause),
      new LedgerReceiptUnsignedError(id, cause),
      new TaskReceiptUnsignedError(id, "completed", cause),
    ]) {
      expect(e.message.length).toBeLessThan(2000)
      expect(e.message).toContain(`'${shown(id)}'`)
      expect(e.requestId).toBe(id)
    }
  })
})

describe("the task ledger's texts quote a task id clipped", () => {
  it("a task in flight, its release refused, a release of an id with no row", async () => {
    const store = new MemoryTaskStore()
    const tasks = new TaskLedger({ storage: store, owner: "w1", ...quiet })
    let release = () => {}
    let runs = 0
    const job = tasks.task({ name: "job" }, async () => {
      runs++
      await new Promise<void>((r) => {
        release = r
      })
      return "done"
    })
    const running = job({}, { taskId: value })
    while (runs === 0) await new Promise((r) => setTimeout(r, 1))
    const pending = await failure(job({}, { taskId: value }))
    expect(pending).toBeInstanceOf(TaskLedgerPendingError)
    expectClipped(pending, `Task 'job' request '${shown(value)}' is already in-flight`)
    const held = await failure(tasks.release(value, { verified: "not_executed", by: "ops", reason: "r" }))
    expect(held).toBeInstanceOf(TaskReleaseRefusedError)
    expectClipped(held, `Task request '${shown(value)}' is held by w1`)
    release()
    expect([await running, runs]).toEqual(["done", 1])
    const done = await failure(tasks.release(value, { verified: "not_executed", by: "ops", reason: "r" }))
    expectClipped(done, `Task request '${shown(value)}' is completed; nothing to release`)
    const unknown = await failure(tasks.release(id, { verified: "not_executed", by: "ops", reason: "r" }))
    expectClipped(unknown, `Cannot release unknown task request '${shown(id)}'`)
    expect((await tasks.get(value))?.row.request_id).toBe(value)
  })

  it("arguments over a store's row limit, nothing claimed", async () => {
    const store = new MemoryTaskStore()
    // The memory store with a row limit, as a Durable Object's declares one.
    const limited: TaskStore = {
      get: (requestId) => store.get(requestId),
      swap: (requestId, expected, next) => store.swap(requestId, expected, next),
      list: () => store.list(),
      limits: { maxRowBytes: 1_000_000 },
    }
    const tasks = new TaskLedger({ storage: limited, ...quiet })
    let runs = 0
    const job = tasks.task({ name: "job" }, async () => ++runs)
    const e = await failure(job({}, { taskId: value }))
    expect(e).toBeInstanceOf(LedgerConfigError)
    expectClipped(e, `request '${shown(value)}': arguments over the store's row limit; nothing was claimed`)
    expect([runs, await store.get(value)]).toEqual([0, null])
  })

  it("Upstash's task store: an id holding an unpaired surrogate", async () => {
    const tasks = new UpstashTaskStore({ redis: upstashClient(), prefix: `${runTag("clip")}:task:` })
    const e = await failure(tasks.get(`${value}\ud800`))
    expect(e).toBeInstanceOf(TaskIdAmbiguousError)
    expectClipped(e, `task request id '${shown(value)}' holds an unpaired surrogate`)
  })
})
