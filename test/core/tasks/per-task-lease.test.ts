// A task's own `leaseTtl` governs its renewals: renewed every third of it (or at the ledger's explicit interval, which
// must be shorter than the lease), so a body that outlives one lease keeps it and never runs twice.
import { describe, expect, it } from "vitest"
import { InvalidOptionError } from "../../../src/core/index.ts"
import { MemoryTaskStore, TaskLedger, TaskLedgerPendingError } from "../../../src/tasks.ts"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Worker a runs a 0.9 s body under a 0.3 s task lease; worker b calls at 0.5 s, when an unrenewed lease has lapsed. */
async function twoWorkers(ledgerOptions: { leaseRenewInterval?: number }) {
  const storage = new MemoryTaskStore()
  const warnings: string[] = []
  const a = new TaskLedger({ storage, ...ledgerOptions, onWarning: (m) => warnings.push(m) })
  const b = new TaskLedger({ storage, ...ledgerOptions, onWarning: (m) => warnings.push(m) })
  let runs = 0
  const body = async (_: object, ctx: { fence: number }) => {
    runs++
    await sleep(900)
    return ctx.fence
  }
  const first = a.task({ name: "report", leaseTtl: 0.3 }, body)({}, { taskId: "T" })
  await sleep(500)
  const second = await b
    .task({ name: "report", leaseTtl: 0.3 }, body)({}, { taskId: "T" })
    .catch((e: unknown) => e)
  return { first: await first, second, runs, warnings, row: (await a.get("T"))?.row.status }
}

describe("a task's leaseTtl shorter than the ledger's", () => {
  it("is renewed every third of the task's lease: another worker finds it live, the body runs once", async () => {
    const out = await twoWorkers({}) // the ledger's lease: the default 3600 s
    expect(out.second).toBeInstanceOf(TaskLedgerPendingError)
    expect(out).toMatchObject({ first: 1, runs: 1, warnings: [], row: "completed" })
  })

  it("an explicit leaseRenewInterval shorter than the task's lease is used", async () => {
    const out = await twoWorkers({ leaseRenewInterval: 0.1 })
    expect(out.second).toBeInstanceOf(TaskLedgerPendingError)
    expect(out).toMatchObject({ first: 1, runs: 1, warnings: [], row: "completed" })
  })
})

describe("an explicit leaseRenewInterval not shorter than a lease is refused", () => {
  it("the ledger's own lease", () => {
    expect(() => new TaskLedger({ leaseTtl: 5, leaseRenewInterval: 5 })).toThrow(InvalidOptionError)
    expect(() => new TaskLedger({ leaseTtl: 5, leaseRenewInterval: 9 })).toThrow(
      /leaseRenewInterval 9 must be shorter than the leaseTtl it renews \(5\)/,
    )
  })

  it("a task's lease, when task() is called", () => {
    const ledger = new TaskLedger({ leaseRenewInterval: 10 })
    expect(() => ledger.task({ name: "t", leaseTtl: 10 }, async () => 1)).toThrow(InvalidOptionError)
    expect(() => ledger.task({ name: "t", leaseTtl: 4 }, async () => 1)).toThrow(
      /leaseRenewInterval 10 must be shorter than the leaseTtl it renews \(4\)/,
    )
    // Renewals off, or a lease that never lapses: nothing to compare.
    expect(() =>
      new TaskLedger({ leaseRenewInterval: 0 }).task({ name: "t", leaseTtl: 1 }, async () => 1),
    ).not.toThrow()
    expect(() => ledger.task({ name: "t", leaseTtl: 0 }, async () => 1)).not.toThrow()
    expect(() => ledger.task({ name: "t", leaseTtl: 11 }, async () => 1)).not.toThrow()
  })
})

describe("a lease longer than a timer can wait", () => {
  it("a 90-day task lease is not renewed every millisecond (a third of it overflowed the timer)", async () => {
    const storage = new MemoryTaskStore()
    let writes = 0
    const swap = storage.swap.bind(storage)
    storage.swap = (...args: Parameters<typeof swap>) => {
      writes++
      return swap(...args)
    }
    const ledger = new TaskLedger({ storage, leaseTtl: 90 * 86_400 })
    expect(
      await ledger.task({ name: "slow" }, async () => sleep(60).then(() => "done"))({}, { taskId: "L" }),
    ).toBe("done")
    // The claim and the completion; a millisecond timer would have renewed dozens of times in 60 ms.
    expect(writes).toBeLessThanOrEqual(3)
  })
})
