// A task's own `leaseTtl` governs its renewals: renewed every third of it (or at the ledger's explicit interval, which
// must be shorter than the lease), so a body that outlives one lease keeps it and never runs twice.
import { describe, expect, it } from "vitest"
import { InvalidOptionError } from "../../../src/core/index.ts"
import { MemoryTaskStore, TaskLedger, TaskLedgerPendingError } from "../../../src/tasks.ts"
import { ManualClock } from "../../../src/testing.ts"
import { expectRenewals } from "../ledger/renewals.ts"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * Worker a runs a body under a 0.3 s task lease; worker b calls 0.6 s later, when an unrenewed lease has lapsed.
 * Lease time runs on a manual clock, renewal ticks are real timers: by a real clock, ticks 0.2 s late on a loaded
 * machine lapsed the lease. Each 0.15 s step (the lapse watch stops the body 0.2 s after a renewal) waits for a
 * renewal stamped at the new time; without renewals at the task's interval none comes and the wait fails.
 */
async function twoWorkers(ledgerOptions: { leaseRenewInterval?: number }) {
  const clock = new ManualClock()
  const storage = new MemoryTaskStore()
  const warnings: string[] = []
  const a = new TaskLedger({ storage, clock, ...ledgerOptions, onWarning: (m) => warnings.push(m) })
  const b = new TaskLedger({ storage, clock, ...ledgerOptions, onWarning: (m) => warnings.push(m) })
  let runs = 0
  let finish!: () => void
  const done = new Promise<void>((r) => {
    finish = r
  })
  const body = async (_: object, ctx: { fence: number }) => {
    runs++
    await done
    return ctx.fence
  }
  const first = a.task({ name: "report", leaseTtl: 0.3 }, body)({}, { taskId: "T" })
  while (runs === 0) await sleep(1)
  await expectRenewals(clock, async () => (await storage.get("T"))?.lease?.heartbeat_at, 0.15, 4)
  const second = await b
    .task({ name: "report", leaseTtl: 0.3 }, body)({}, { taskId: "T" })
    .catch((e: unknown) => e)
  finish()
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
