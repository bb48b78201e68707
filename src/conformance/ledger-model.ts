// Random operation sequences for the ledger conformance suite: claims, compare-and-sets, set() and the clock, driven
// against a store and against a model of the storage contract written here on its own. The suite's tables check each
// rule once; sequences check that the rules compose (a claim after a CAS after a lapsed lease ...), and the SQL and Lua
// backends, which encode the rules a second time, agree with the contract the JavaScript backends share.
import { newEntry } from "../adapter-kit.ts"
import {
  type ClaimOptions,
  EffectState,
  type LedgerEntry,
  LedgerStaleFenceError,
  type LedgerStorage,
  SideEffectBoundary,
  TerminalOutcome,
  type TransitionExpectation,
} from "../core/index.ts"
import { seededRandom } from "./random.ts"

const OUTCOMES: readonly TerminalOutcome[] = Object.values(TerminalOutcome)
const PHASES: readonly EffectState[] = Object.values(EffectState)
const BOUNDARIES: readonly SideEffectBoundary[] = Object.values(SideEffectBoundary)
const OWNERS = ["w1", "w2"] as const

/** One step of a sequence, as the failure message shows it. */
export type ModelStep =
  | {
      op: "claim"
      id: string
      owner: string
      dispatch: string
      ttl: number
      now: number
      options?: ClaimOptions
    }
  | { op: "cas"; id: string; next: LedgerEntry; expect: TransitionExpectation }
  | { op: "set"; id: string; entry: LedgerEntry }
  | { op: "tick"; seconds: number }

/** The contract, stated directly: which stored rows a claim takes over, what a CAS requires, what set() refuses. */
class ContractModel {
  readonly rows = new Map<string, LedgerEntry>()
  /** A store's own lease clock (LedgerStorageFixture.leaseClock), read when it answered. */
  readonly leaseClock: (() => number) | undefined
  constructor(leaseClock?: () => number) {
    this.leaseClock = leaseClock
  }
  /** The rows written under each dispatch id (`kwargs.tool_call_id`), then or now. */
  readonly dispatched = new Map<string, Set<string>>()

  #write(row: LedgerEntry): void {
    this.rows.set(row.requestId, row)
    const d = row.kwargs.tool_call_id
    if (typeof d === "string" && d)
      this.dispatched.set(d, (this.dispatched.get(d) ?? new Set()).add(row.requestId))
  }

  /**
   * `findByDispatchId(d)` must find every row now under `d` (the drift gate's evidence) and nothing never written
   * under it. A row re-claimed under another call id may still be found under its first: the stores' indexes only
   * add, which makes a later reuse of that first id fail closed (the original scans the rows as they are now).
   */
  dispatchBounds(d: string): { must: string[]; may: string[] } {
    const may = [...(this.dispatched.get(d) ?? [])].sort()
    return { must: may.filter((id) => this.rows.get(id)?.kwargs.tool_call_id === d), may }
  }

  claim(
    entry: LedgerEntry,
    ttl: number,
    now: number,
    options?: ClaimOptions,
  ): "claimed" | "completed" | "in_flight" {
    const prior = this.rows.get(entry.requestId)
    if (prior) {
      const o = prior.terminalOutcome
      if (o === "COMPLETED") return "completed"
      // A live lease, and the ambiguous outcomes, are never taken over; a lease is live until `now` reaches it.
      const lapsed = prior.leaseUntil !== null && now >= prior.leaseUntil
      if ((o === "IN_FLIGHT" && !lapsed) || o === "BLOCKED" || o === "UNKNOWN") return "in_flight"
      if (options && "reclaimFence" in options && options.reclaimFence !== prior.fence) return "in_flight"
    }
    this.#write({
      ...entry,
      terminalOutcome: "IN_FLIGHT",
      status: "in-flight",
      leaseUntil: ttl > 0 ? now + ttl : null,
      lastHeartbeatAt: now,
      fence: (prior?.fence ?? 0) + 1,
    })
    return "claimed"
  }

  cas(next: LedgerEntry, x: TransitionExpectation): boolean {
    const row = this.rows.get(next.requestId)
    const ok =
      row !== undefined &&
      x.outcomes.includes(row.terminalOutcome) &&
      (x.owner == null || x.owner === row.owner) &&
      x.fence === row.fence &&
      (x.effectPhase === undefined || x.effectPhase === (row.effectPhase ?? "INTENDED")) &&
      (x.sideEffectBoundary === undefined ||
        x.sideEffectBoundary === (row.sideEffectBoundary ?? "not_crossed")) &&
      (x.leaseHeldAt === undefined || row.leaseUntil === null || row.leaseUntil > x.leaseHeldAt) &&
      !this.#endsLiveLease(row, next, x)
    if (ok) this.#write(next)
    return ok
  }

  /**
   * On a lease clock of the store's own: another writer's end of an IN_FLIGHT row whose bounded lease that clock
   * reads as live. The holder's writes expect IN_FLIGHT alone and keep the fence, or ask for the lease held; a write
   * that keeps the row IN_FLIGHT at its fence ends nothing.
   */
  #endsLiveLease(row: LedgerEntry, next: LedgerEntry, x: TransitionExpectation): boolean {
    if (!this.leaseClock || x.leaseHeldAt !== undefined) return false
    if (row.terminalOutcome !== "IN_FLIGHT" || row.leaseUntil === null) return false
    if (this.leaseClock() >= row.leaseUntil) return false
    const holders = x.outcomes.every((o) => o === "IN_FLIGHT")
    return next.fence !== x.fence || (next.terminalOutcome !== "IN_FLIGHT" && !holders)
  }

  /** true when written, false when refused as stale. */
  set(entry: LedgerEntry): boolean {
    const row = this.rows.get(entry.requestId)
    if (row && row.fence > entry.fence) return false
    this.#write(entry)
    return true
  }
}

const statusOf = (o: TerminalOutcome): LedgerEntry["status"] =>
  o === "COMPLETED" ? "completed" : o.startsWith("FAILED") ? "failed" : "in-flight"

/** The steps of one sequence over `ids`, generated against the model so most steps target real rows and fences. */
function* steps(seed: number, ids: readonly string[], count: number, t0: number, model: ContractModel) {
  const r = seededRandom(seed)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T
  let now = t0
  for (let i = 0; i < count; i++) {
    const id = pick(ids)
    const row = model.rows.get(id)
    const fence = row?.fence ?? 0
    const base = row ?? newEntry({ requestId: id, tool: "pay", owner: pick(OWNERS), kwargs: { n: 0 } }, now)
    const roll = r()
    if (roll < 0.15) {
      const step: ModelStep = { op: "tick", seconds: pick([0.5, 29.75, 30, 301]) }
      now += step.seconds
      yield step
    } else if (roll < 0.45) {
      const options = pick<ClaimOptions | undefined>([
        undefined,
        undefined,
        {},
        { reclaimFence: null },
        { reclaimFence: fence },
        { reclaimFence: fence + 1 },
      ])
      const dispatch = `${ids[0]}-call-${pick([1, 2, 3])}`
      yield {
        op: "claim",
        id,
        owner: pick(OWNERS),
        dispatch,
        ttl: pick([0, 30, 30, 300]),
        now,
        options,
      } as ModelStep
    } else if (roll < 0.85) {
      const outcome = pick(OUTCOMES)
      const next: LedgerEntry = {
        ...base,
        terminalOutcome: outcome,
        status: statusOf(outcome),
        owner: pick(OWNERS),
        effectPhase: pick(PHASES),
        sideEffectBoundary: pick(BOUNDARIES),
        result: { step: i },
        finishedAt: outcome === "IN_FLIGHT" ? null : now,
      }
      // An expectation the stored row meets, then (half the time) one requirement it does not: each rule of the
      // compare-and-set is tested on its own, which a store that skips one rule fails.
      const held = row?.leaseUntil != null ? row.leaseUntil - pick([0.25, 29]) : now
      const expect: { -readonly [K in keyof TransitionExpectation]: TransitionExpectation[K] } = {
        outcomes: [...OUTCOMES.filter(() => r() < 0.3), row?.terminalOutcome ?? pick(OUTCOMES)],
        fence,
        ...pick([{}, { owner: null }, { owner: row?.owner ?? "w1" }]),
        ...pick([{}, { effectPhase: row?.effectPhase ?? "INTENDED" }]),
        ...pick([{}, { sideEffectBoundary: row?.sideEffectBoundary ?? "not_crossed" }]),
        ...pick([{}, { leaseHeldAt: held }]),
      }
      if (r() < 0.5) {
        const miss = pick(["outcomes", "owner", "fence", "effectPhase", "boundary", "leaseHeldAt"] as const)
        if (miss === "outcomes")
          expect.outcomes = OUTCOMES.filter((o) => o !== row?.terminalOutcome && r() < 0.5)
        if (miss === "owner") expect.owner = row?.owner === "w1" ? "w2" : "w1"
        if (miss === "fence") expect.fence = fence + pick([1, -1])
        if (miss === "effectPhase") expect.effectPhase = pick(PHASES.filter((p) => p !== row?.effectPhase))
        if (miss === "boundary")
          expect.sideEffectBoundary = pick(BOUNDARIES.filter((b) => b !== row?.sideEffectBoundary))
        // A lease is held while `leaseUntil > leaseHeldAt`: asking at the instant it ends misses.
        if (miss === "leaseHeldAt") expect.leaseHeldAt = row?.leaseUntil ?? now
      }
      // The ledger never asks with no outcome, and the HTTP API refuses such a request as malformed.
      if (!expect.outcomes.length)
        expect.outcomes = [pick(OUTCOMES.filter((o) => o !== row?.terminalOutcome))]
      yield { op: "cas", id, next, expect } as ModelStep
    } else {
      const outcome = pick(OUTCOMES)
      const entry: LedgerEntry = {
        ...base,
        terminalOutcome: outcome,
        status: statusOf(outcome),
        fence: Math.max(0, fence + pick([-1, 0, 1])),
        leaseUntil: pick([null, now + 30, now - 1]),
        effectPhase: pick(PHASES),
        sideEffectBoundary: pick(BOUNDARIES),
        result: { set: i },
      }
      yield { op: "set", id, entry } as ModelStep
    }
  }
}

/**
 * Runs one seeded sequence against `store` (reads alternate with `peer`, another handle when the backend has one)
 * and the model, comparing every answer and every row after every step. Throws with the seed, the step and what
 * differed.
 */
export async function runModelSequence(
  store: LedgerStorage,
  peer: LedgerStorage,
  ids: readonly string[],
  seed: number,
  count: number,
  t0: number,
  leaseClock?: () => number,
): Promise<void> {
  const model = new ContractModel(leaseClock)
  let i = 0
  const fail = (step: ModelStep, what: string, got: unknown, want: unknown): never => {
    throw new Error(
      `seed ${seed}, step ${i} ${JSON.stringify(step)}: ${what} was ${JSON.stringify(got)}, the contract says ${JSON.stringify(want)}`,
    )
  }
  for (const step of steps(seed, ids, count, t0, model)) {
    const handle = i % 2 ? peer : store
    if (step.op === "claim") {
      const kwargs = { n: i, tool_call_id: step.dispatch }
      const entry = newEntry({ requestId: step.id, tool: "pay", owner: step.owner, kwargs }, step.now)
      const want = model.claim(entry, step.ttl, step.now, step.options)
      const got = await handle.tryClaimInflight(entry, step.ttl, step.now, step.options)
      if (got.outcome !== want) fail(step, "the claim", got.outcome, want)
      if (!sameRow(got.entry, model.rows.get(step.id)))
        fail(step, "the claim's row", got.entry, model.rows.get(step.id))
    } else if (step.op === "cas") {
      // The store answers first: a store on its own lease clock reads it as the call left it.
      const got = await handle.tryTransition(step.next, step.expect)
      const want = model.cas(step.next, step.expect)
      if (got !== want) fail(step, "tryTransition", got, want)
    } else if (step.op === "set") {
      const want = model.set(step.entry)
      const got = await handle.set(step.entry).then(
        () => true,
        (e: unknown) => {
          if (e instanceof LedgerStaleFenceError) return false
          throw e
        },
      )
      if (got !== want) fail(step, "set() writing", got, want)
    }
    const reader = i % 2 ? store : peer
    for (const id of ids) {
      const got = await reader.get(id)
      const want = model.rows.get(id) ?? null
      if (!sameRow(got, want)) fail(step, `the row '${id}'`, got, want)
    }
    // The drift gate's index, where the store has one.
    for (const d of [1, 2, 3].map((n) => `${ids[0]}-call-${n}`)) {
      if (!reader.findByDispatchId) break
      const got = (await reader.findByDispatchId(d)).map((e) => e.requestId).sort()
      const { must, may } = model.dispatchBounds(d)
      if (must.some((id) => !got.includes(id)) || got.some((id) => !may.includes(id)))
        fail(step, `findByDispatchId('${d}')`, got, { atLeast: must, atMost: may })
    }
    i++
  }
}

/** Rows compare by their JSON (what every backend stores): `undefined` members and key order do not count. */
function sameRow(a: LedgerEntry | null | undefined, b: LedgerEntry | null | undefined): boolean {
  return canonical(a ?? null) === canonical(b ?? null)
}

function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([p], [q]) => (p < q ? -1 : 1)))
      : x,
  )
}
