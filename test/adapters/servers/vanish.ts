// The world changes a row under the ledger: an operator deletes it, Redis evicts its key, a restore puts an older
// copy back, a Python worker rewrites it in the original's shape. Each scenario runs on every store of
// vanish-lanes.ts, with two workers (two ledgers, two owners, a client each) on one manual clock. What the ledger
// must do (docs/stores.md, "When the world changes a row"): a holder's write on a row it no longer holds fails
// loudly and writes nothing; a redispatch never runs a call whose effect may have started while a copy of its row
// says so; a stale holder cannot write where a newer fence is stored.
import { expect } from "vitest"
import { entryToRow } from "../../../src/adapter-kit.ts"
import { pythonJson } from "../../../src/conformance/python-rows.ts"
import {
  ActionLedger,
  type LedgerEntry,
  LedgerHardBlockError,
  LedgerLeaseError,
  LedgerOutcomeAlreadySetError,
  LedgerPollTimeoutError,
  LedgerUnknownRequestError,
} from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"
import type { VanishLane } from "./vanish-lanes.ts"

const PAY = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
const UPSERT = { agentId: "a", policyVersion: "1", sideEffectClass: "idempotent_mutate" } as const
const ALLOWED = { allowed: true, verdicts: [], deniedReasons: [] }
const LEASE = 10

type Guard = { fence: number; owner: string | null }

/** Two workers on one store and one clock, a payment tool that counts its effects, and the lane's raw access. */
export class World {
  readonly clock = new ManualClock(1_800_000_000)
  readonly warnings: string[] = []
  payments = 0
  readonly w1: ActionLedger
  readonly w2: ActionLedger
  readonly #stores: { close?(): Promise<void> }[] = []

  constructor(readonly lane: VanishLane) {
    const worker = (owner: string) => {
      const storage = lane.client(this.clock)
      this.#stores.push(storage)
      return new ActionLedger({
        storage,
        owner,
        clock: this.clock,
        leaseTtl: LEASE,
        leaseRenewInterval: 0,
        pollInterval: 1,
        pollTimeout: 3,
        onWarning: (m) => this.warnings.push(m),
      })
    }
    this.w1 = worker("w1")
    this.w2 = worker("w2")
  }

  /** A worker's manual claim of the payment `id`, its decision riding on the claim. */
  async hold(w: ActionLedger, id: string, binding: typeof PAY | typeof UPSERT = PAY): Promise<Guard> {
    const c = await w.claim({
      tool: "pay",
      args: { amount: 1 },
      binding,
      decision: ALLOWED,
      meta: { requestId: id },
    })
    expect(c.owned).toBe(true)
    return { fence: c.entry.fence, owner: c.entry.owner }
  }

  /** A redispatch of the payment through `w`'s tool: its effect counts. */
  pay(w: ActionLedger, id: string, binding: typeof PAY | typeof UPSERT = PAY): Promise<unknown> {
    const tool = w.tool({ name: "pay", binding }, async (_args: { amount: number }, tx) =>
      tx.sideEffect(async () => ({ paid: ++this.payments })),
    )
    return tool({ amount: 1 }, { requestId: id })
  }

  row(id: string): Promise<LedgerEntry | null> {
    return this.w1.get(id)
  }

  /** An operator settles `id` as charged with `result`; a redispatch then replays it and pays nothing. */
  async releaseCharged(id: string, result: { id: string }, reason: string): Promise<void> {
    await this.w2.release(id, { verified: "completed", result, by: "ops", reason })
    expect(await this.pay(this.w2, id)).toEqual(result)
    expect(this.payments).toBe(0)
  }

  async close(): Promise<void> {
    for (const s of this.#stores) await s.close?.()
  }
}

/** w1 holds `id` past its boundary; a Python worker then writes the row in its own shape with `fields(held)`. */
async function rewrittenByPython(
  world: World,
  id: string,
  fields: (held: LedgerEntry) => Record<string, unknown>,
): Promise<Guard> {
  const g = await world.hold(world.w1, id)
  await world.w1.advanceBoundary(id, "maybe_crossed", g)
  const held = (await world.row(id)) as LedgerEntry
  await world.lane.writeRaw(id, pythonRow(held, fields(held)))
  return g
}

/** Every write a holder makes after its claim, each on its own. */
function holderWrites(w: ActionLedger, id: string, g: Guard): [string, () => Promise<unknown>][] {
  return [
    ["advance boundary", () => w.advanceBoundary(id, "crossed", g)],
    ["provider ref", () => w.attachExternalOperationRef(id, "pi_late", g)],
    ["renew", () => w.renewLease(id, g)],
    ["complete", () => w.complete(id, { id: "pi_late" }, g)],
    ["fail", () => w.fail(id, "gateway timeout", g)],
    ["mark unknown", () => w.markUnknown(id, "lost", g)],
  ]
}

type ErrorClass = new (...a: never[]) => Error

/** Each holder write rejects with `error` (or the one `except` names for it), and nothing lands (read raw). */
async function everyWriteRefused(
  world: World,
  id: string,
  g: Guard,
  error: ErrorClass,
  except: Record<string, ErrorClass> = {},
): Promise<void> {
  const before = await world.lane.raw(id)
  for (const [label, write] of holderWrites(world.w1, id, g)) {
    await expect(write(), label).rejects.toBeInstanceOf(except[label] ?? error)
    expect(await world.lane.raw(id), label).toBe(before)
  }
}

/** The row as the Python original writes it: its own fields only, epochs as floats. */
function pythonRow(from: LedgerEntry, fields: Record<string, unknown>): string {
  return pythonJson({ ...entryToRow(from), ...fields })
}

export interface Scenario {
  readonly name: string
  /** Rows deleted or written around the store, or a tombstone that outlives the row key (Redis, Upstash). */
  readonly needs?: "outside" | "tombstone"
  run(world: World, id: string): Promise<void>
}

export const SCENARIOS: Scenario[] = [
  {
    name: "a row deleted under its holder: every fenced write is refused and none recreates the row",
    needs: "outside",
    async run(world, id) {
      const g = await world.hold(world.w1, id)
      await world.w1.advanceBoundary(id, "maybe_crossed", g)
      await world.lane.drop?.(id)
      await everyWriteRefused(world, id, g, LedgerUnknownRequestError)
      expect(await world.row(id)).toBeNull()
    },
  },
  {
    name: "a row deleted inside the tool's body: the effect is not started, or its completion is reported lost",
    needs: "outside",
    async run(world, id) {
      // Deleted before sideEffect(): the boundary write finds no row, so the provider is never called.
      const before = world.w1.tool({ name: "pay", binding: PAY }, async (_a: { amount: number }, tx) => {
        await world.lane.drop?.(id)
        return tx.sideEffect(async () => ({ paid: ++world.payments }))
      })
      await expect(before({ amount: 1 }, { requestId: id })).rejects.toBeInstanceOf(
        LedgerOutcomeAlreadySetError,
      )
      expect(world.payments).toBe(0)
      expect(await world.row(id)).toBeNull()
      // Deleted after the effect: the caller gets the body's result (the charge happened), the completion is not
      // written anywhere, and a warning says the result was discarded.
      const late = `${id}-late`
      const after = world.w1.tool({ name: "pay", binding: PAY }, async (_a: { amount: number }, tx) => {
        const out = await tx.sideEffect(async () => ({ paid: ++world.payments }))
        await world.lane.drop?.(late)
        return out
      })
      expect(await after({ amount: 1 }, { requestId: late })).toEqual({ paid: 1 })
      expect(await world.row(late)).toBeNull()
      expect(world.warnings.filter((w) => w.includes("tool result discarded"))).toHaveLength(1)
      expect(world.warnings.join("\n")).toContain("stored outcome is missing")
    },
  },
  {
    name: "a crossed in-flight row deleted, its worker dead: the store forgot the call, and a redispatch runs it",
    needs: "outside",
    async run(world, id) {
      const g = await world.hold(world.w1, id)
      await world.w1.advanceBoundary(id, "maybe_crossed", g)
      await world.w1.attachExternalOperationRef(id, "pi_1", g)
      await world.lane.drop?.(id)
      // No copy says the effect may have started: this is a first call to the store (stores.md says so).
      expect(await world.pay(world.w2, id)).toEqual({ paid: 1 })
      expect(world.payments).toBe(1)
      // The first worker, alive after all, cannot write over the new claim (another owner, though the same fence).
      const row = (await world.row(id)) as LedgerEntry
      expect(row).toMatchObject({ terminalOutcome: "COMPLETED", fence: 1, owner: "w2" })
      await everyWriteRefused(world, id, g, LedgerOutcomeAlreadySetError)
    },
  },
  {
    name: "the row key evicted, the tombstone kept: a redispatch hard-blocks, the holder's completion still lands",
    needs: "tombstone",
    async run(world, id) {
      const g = await world.hold(world.w1, id)
      await world.w1.advanceBoundary(id, "maybe_crossed", g)
      await world.lane.evict?.(id)
      // Read from the tombstone as an abandoned claim: never a fresh call.
      expect(await world.row(id)).toMatchObject({ terminalOutcome: "IN_FLIGHT", fence: 1, owner: "w1" })
      // The holder is alive: it cannot renew a lease that now reads lapsed, but its completion lands on the row the
      // tombstone keeps, and both copies say COMPLETED.
      await expect(world.w1.renewLease(id, g)).rejects.toBeInstanceOf(LedgerLeaseError)
      await world.w1.complete(id, { id: "pi_1" }, g)
      expect(await world.lane.raw(id)).toContain('"COMPLETED"')
      expect(await world.pay(world.w2, id)).toEqual({ id: "pi_1" })
      // Evicted while in flight with nobody to complete: the ghost is hard-blocked, never paid again.
      const dead = `${id}-dead`
      const d = await world.hold(world.w1, dead)
      await world.w1.advanceBoundary(dead, "maybe_crossed", d)
      await world.lane.evict?.(dead)
      await expect(world.pay(world.w2, dead)).rejects.toBeInstanceOf(LedgerHardBlockError)
      expect(world.payments).toBe(0)
      expect(await world.row(dead)).toMatchObject({ terminalOutcome: "BLOCKED", fence: 1 })
      // The holder's late completion is refused; the operator settles the row.
      await expect(world.w1.complete(dead, { id: "pi_2" }, d)).rejects.toBeInstanceOf(
        LedgerOutcomeAlreadySetError,
      )
      await world.releaseCharged(dead, { id: "pi_2" }, "found")
    },
  },
  {
    name: "a completed payment restored to its in-flight backup: redispatches wait, then hard-block; never pay",
    async run(world, id) {
      const g = await world.hold(world.w1, id)
      await world.w1.advanceBoundary(id, "maybe_crossed", g)
      await world.w1.attachExternalOperationRef(id, "pi_1", g)
      const backup = (await world.lane.raw(id)) as string
      await world.w1.complete(id, { id: "pi_1" }, g)
      // The memory store takes it through set(): an older copy at the same fence is written as given.
      await world.lane.writeRaw(id, backup)
      expect(await world.row(id)).toMatchObject({ terminalOutcome: "IN_FLIGHT", fence: 1 })
      await expect(world.pay(world.w2, id)).rejects.toBeInstanceOf(LedgerPollTimeoutError)
      world.clock.advance(LEASE)
      await expect(world.pay(world.w2, id)).rejects.toBeInstanceOf(LedgerHardBlockError)
      expect(await world.row(id)).toMatchObject({ terminalOutcome: "BLOCKED", fence: 1 })
      expect(world.payments).toBe(0)
      await world.releaseCharged(id, { id: "pi_1" }, "charged")
    },
  },
  {
    name: "a row restored under a newer holder: the newer holder's writes are refused, not the store's history",
    needs: "outside",
    async run(world, id) {
      // w1 claims an idempotent upsert and stalls; its lease lapses; w2 takes the call over (fence 2).
      const g1 = await world.hold(world.w1, id, UPSERT)
      const backup = (await world.lane.raw(id)) as string
      world.clock.advance(LEASE + 1)
      const g2 = await world.hold(world.w2, id, UPSERT)
      expect(g2.fence).toBe(2)
      // The fence-1 copy comes back: the store no longer knows fence 2, so w2 has lost the row...
      await world.lane.writeRaw(id, backup)
      await expect(world.w2.complete(id, { v: 2 }, g2)).rejects.toBeInstanceOf(LedgerOutcomeAlreadySetError)
      // ...and to the store w1 is its holder again: its completion lands, and a redispatch returns it.
      await world.w1.complete(id, { v: 1 }, g1)
      expect(await world.pay(world.w2, id, UPSERT)).toEqual({ v: 1 })
      expect(world.payments).toBe(0)
    },
  },
  {
    name: "only the row key restored to an older fence: the tombstone's newer row wins, the stale holder is refused",
    needs: "tombstone",
    async run(world, id) {
      const g1 = await world.hold(world.w1, id, UPSERT)
      const backup = (await world.lane.raw(id)) as string
      world.clock.advance(LEASE + 1)
      const g2 = await world.hold(world.w2, id, UPSERT)
      await world.w2.complete(id, { v: 2 }, g2)
      await world.lane.writeKeyOnly?.(id, backup)
      await expect(world.w1.complete(id, { v: 1 }, g1)).rejects.toBeInstanceOf(LedgerOutcomeAlreadySetError)
      expect(await world.row(id)).toMatchObject({ terminalOutcome: "COMPLETED", fence: 2, owner: "w2" })
      expect(await world.pay(world.w1, id, UPSERT)).toEqual({ v: 2 })
      expect(world.payments).toBe(0)
    },
  },
  {
    name: "a Python worker takes the lapsed row over (fence + 1, its own shape): the TS holder writes nothing",
    async run(world, id) {
      const g = await world.hold(world.w1, id)
      await world.w1.advanceBoundary(id, "maybe_crossed", g)
      const held = (await world.row(id)) as LedgerEntry
      const py = pythonRow(held, {
        fence: g.fence + 1,
        owner: "host-py:4242",
        side_effect_boundary: "not_crossed",
        effect_phase: "INTENDED",
        started_at: 1_800_000_011.125,
        lease_until: 1_800_003_611.125,
        last_heartbeat_at: 1_800_000_011.125,
      })
      world.clock.advance(LEASE + 1)
      await world.lane.writeRaw(id, py)
      const stored = await world.lane.raw(id)
      await everyWriteRefused(world, id, g, LedgerOutcomeAlreadySetError)
      expect(await world.lane.raw(id)).toBe(stored)
      // A redispatch waits for the Python holder, as for any live lease.
      await expect(world.pay(world.w2, id)).rejects.toBeInstanceOf(LedgerPollTimeoutError)
      expect(world.payments).toBe(0)
    },
  },
  {
    name: "a Python worker completes the lapsed row, then the row key is evicted: a redispatch replays, never pays",
    needs: "tombstone",
    async run(world, id) {
      // w1 claims and dies before its effect; a Python worker takes the call over and charges (fence 2). Under a
      // prefix without ':' it writes the key and the original's tombstone only: ours still says w1's abandoned claim.
      const g = await world.hold(world.w1, id)
      const held = (await world.row(id)) as LedgerEntry
      world.clock.advance(LEASE + 1)
      await world.lane.writeRaw(
        id,
        pythonRow(held, {
          fence: g.fence + 1,
          owner: "host-py:4242",
          status: "completed",
          terminal_outcome: "COMPLETED",
          result: { id: "pi_py" },
          finished_at: 1_800_000_011.125,
          side_effect_boundary: "crossed",
        }),
      )
      await world.lane.evict?.(id)
      expect(await world.row(id)).toMatchObject({ terminalOutcome: "COMPLETED", fence: g.fence + 1 })
      expect(await world.pay(world.w2, id)).toEqual({ id: "pi_py" })
      expect(world.payments).toBe(0)
      await everyWriteRefused(world, id, g, LedgerOutcomeAlreadySetError, { renew: LedgerLeaseError })
    },
  },
  {
    name: "a Python worker blocks the row (same fence, its shape): the TS holder's completion is refused",
    async run(world, id) {
      const g = await rewrittenByPython(world, id, () => ({
        terminal_outcome: "BLOCKED",
        status: "failed",
        error: "lease expired",
        finished_at: 1_800_000_011.5,
      }))
      await everyWriteRefused(world, id, g, LedgerOutcomeAlreadySetError)
      await expect(world.pay(world.w2, id)).rejects.toBeInstanceOf(LedgerHardBlockError)
      await world.releaseCharged(id, { id: "pi_1" }, "charged")
    },
  },
  {
    name: "a Python worker writes the row as a legacy EXPIRED row: the TS holder is refused, a redispatch blocks",
    async run(world, id) {
      const g = await rewrittenByPython(world, id, () => ({
        terminal_outcome: "EXPIRED",
        status: "in-flight",
        lease_until: 1_799_999_999.5,
      }))
      // A renewal reads the lapsed lease and refuses before any write.
      await everyWriteRefused(world, id, g, LedgerOutcomeAlreadySetError, { renew: LedgerLeaseError })
      await expect(world.pay(world.w2, id)).rejects.toBeInstanceOf(LedgerHardBlockError)
      expect(await world.row(id)).toMatchObject({ terminalOutcome: "BLOCKED", fence: g.fence })
      expect(world.payments).toBe(0)
    },
  },
  {
    name: "a Python operator marks the live holder dead (same fence, float epochs): the holder still completes",
    async run(world, id) {
      const g = await rewrittenByPython(world, id, (held) => ({
        worker_dead_asserted_by: "ops@py",
        worker_dead_asserted_at: 1_800_000_001.25,
        lease_until: (held.leaseUntil as number) + 0.5,
      }))
      // The holder is alive after all and its effect ran: the completion is the truth, and it lands once.
      await world.w1.complete(id, { id: "pi_1" }, g)
      expect(await world.row(id)).toMatchObject({ terminalOutcome: "COMPLETED", fence: g.fence, owner: "w1" })
      expect(await world.pay(world.w2, id)).toEqual({ id: "pi_1" })
      expect(world.payments).toBe(0)
    },
  },
]
