// The small object the engine shares: store, clock, owner, policy and warnings. `ActionLedger` builds one from its
// options; the claim loop, fenced writes, the tool wrapper and the operator actions take it instead of the class.

import { secondsProblem } from "../seconds.ts"
import type { LedgerStorage } from "../storage/contract.ts"
import { MemoryLedgerStorage } from "../storage/memory.ts"
import { SafeStorage } from "../storage/safe-storage.ts"
import { type Clock, systemClock } from "./clock.ts"
import { LedgerConfigError } from "./errors.ts"
import {
  type ArgsDriftPolicy,
  oneOf,
  type RequestIdentityPolicy,
  type UnclassifiedPolicy,
} from "./model/enums.ts"
import type { ReceiptHook } from "./model/receipt-hook.ts"
import type { DecisionPredicate, Reconciler } from "./model/reconcile.ts"

export interface ActionLedgerOptions {
  /** Defaults to a process-local `MemoryLedgerStorage`. */
  storage?: LedgerStorage
  /** Seconds a claim is leased; `<= 0` means unbounded. Default 3600. */
  leaseTtl?: number
  /** Seconds between automatic lease renewals while a body runs; default `leaseTtl / 3`, `<= 0` disables. */
  leaseRenewInterval?: number | null
  /** Seconds between polls of another worker's transition. Default 0.05. */
  pollInterval?: number
  /** Seconds a redispatch waits for another worker before `LedgerPollTimeoutError`; `null` waits forever. Default 300. */
  pollTimeout?: number | null
  reconciler?: Reconciler
  /** Raise `LedgerSoftBlockError` for BLOCKED/UNKNOWN reads instead of re-running them. */
  deferReadOnlyUnknown?: boolean
  /** Tools without a binding: `warn` keeps legacy dedupe, `strict` treats them as non_idempotent_mutate. */
  unclassifiedPolicy?: UnclassifiedPolicy
  onArgsDrift?: ArgsDriftPolicy
  /** Reclaim a lapsed lease only once the worker looks dead (operator assertion or silent heartbeat). */
  reclaimRequiresDeathSignal?: boolean
  /** Seconds without a heartbeat after which a worker counts as dead. Default `2 * leaseTtl` (never if unbounded). */
  presumedDeadAfter?: number | null
  requestIdentityPolicy?: RequestIdentityPolicy
  /** This worker's name in rows it claims. Default: one random id per running program. */
  owner?: string
  /** Time in epoch seconds; tests pass a `ManualClock`. */
  clock?: Clock | { now(): number }
  /** Checks run before any claim; a denial refuses the call without writing. */
  predicates?: readonly DecisionPredicate[]
  /** Where one-time warnings go. Default `console.warn`. */
  onWarning?: (message: string) => void
  /**
   * Signed audit receipts for COMPLETED / FAILED_* outcomes and operator releases, e.g.
   * `new ReceiptEmitter({ signer, store, agentId })`. The receipt id rides on the outcome write (`receiptRef`).
   */
  receipts?: ReceiptHook | null
}

/** Every policy knob, resolved to its value. */
export interface LedgerPolicy {
  readonly leaseTtl: number
  readonly leaseRenewInterval: number
  readonly pollInterval: number
  readonly pollTimeout: number | null
  readonly requestIdentityPolicy: RequestIdentityPolicy
  readonly unclassifiedPolicy: UnclassifiedPolicy
  readonly onArgsDrift: ArgsDriftPolicy
  readonly deferReadOnlyUnknown: boolean
  readonly reclaimRequiresDeathSignal: boolean
  readonly presumedDeadAfter: number
  /** Given, not the default: it then decides alone (deadAfter). */
  readonly presumedDeadAfterSet: boolean
  readonly predicates: readonly DecisionPredicate[]
  readonly reconciler: Reconciler | null
}

export interface LedgerCore {
  /** The backend as the caller gave it. */
  readonly storage: LedgerStorage
  /** The same backend, failing closed (every engine read and write goes through this). */
  readonly store: SafeStorage
  readonly clock: Clock
  readonly owner: string
  readonly policy: LedgerPolicy
  /** Signs outcome receipts (engine/receipts.ts); null when receipts are off. */
  readonly receipts: ReceiptHook | null
  /** Once per key for the core's lifetime. */
  warnOnce(key: string, message: string): void
  warn(message: string): void
}

// Made on first use: workerd forbids random values while a module loads, so nothing here may run at import.
let processOwner: string | null = null
function defaultOwner(): string {
  processOwner ??= `ts-${globalThis.crypto.randomUUID().slice(0, 8)}`
  return processOwner
}

/** `value` when it can be the seconds option `name` (see core/seconds.ts), else `LedgerConfigError`. */
export function seconds(name: string, value: number, min?: number, infinite?: boolean): number {
  const problem = secondsProblem(name, value, min, infinite)
  if (problem) throw new LedgerConfigError(problem)
  return value
}

/** Per-call overrides (a tool's options, a manual claim), checked once when they are given. */
export function checkCallSeconds(o: {
  leaseTtl?: number
  pollInterval?: number
  pollTimeout?: number | null
}): void {
  if (o.leaseTtl !== undefined) seconds("leaseTtl", o.leaseTtl)
  if (o.pollInterval !== undefined) seconds("pollInterval", o.pollInterval, 0)
  if (o.pollTimeout != null) seconds("pollTimeout", o.pollTimeout, 0, true)
}

export function createLedgerCore(options: ActionLedgerOptions = {}): LedgerCore {
  const storage = options.storage ?? new MemoryLedgerStorage()
  const leaseTtl = seconds("leaseTtl", options.leaseTtl ?? 3600)
  const renew =
    options.leaseRenewInterval == null ? null : seconds("leaseRenewInterval", options.leaseRenewInterval)
  const c = options.clock
  const clock: Clock = !c ? systemClock : "sleep" in c ? c : { now: () => c.now(), sleep: systemClock.sleep }
  const onWarning = options.onWarning ?? ((m: string) => console.warn(`[mycelium] ${m}`))
  const warned = new Set<string>()
  // A number here is written as given but compared as a string: the completion write is refused as another worker's.
  const owner = options.owner ?? defaultOwner()
  if (typeof owner !== "string" || !owner) throw new LedgerConfigError("owner: pass a non-empty string")
  const policy: LedgerPolicy = {
    leaseTtl,
    // A lease that never lapses needs no renewal; a tool's own lease is then renewed by its third (engine/tool.ts).
    leaseRenewInterval: renew ?? (leaseTtl > 0 ? Math.max(leaseTtl / 3, 0.01) : Infinity),
    pollInterval: seconds("pollInterval", options.pollInterval ?? 0.05, 0),
    pollTimeout:
      options.pollTimeout === undefined
        ? 300
        : options.pollTimeout === null
          ? null
          : seconds("pollTimeout", options.pollTimeout, 0, true),
    onArgsDrift: oneOf("onArgsDrift", ["off", "soft", "hard"], options.onArgsDrift ?? "soft"),
    unclassifiedPolicy: oneOf("unclassifiedPolicy", ["warn", "strict"], options.unclassifiedPolicy ?? "warn"),
    requestIdentityPolicy: oneOf(
      "requestIdentityPolicy",
      ["derived", "require_explicit"],
      options.requestIdentityPolicy ?? "derived",
    ),
    deferReadOnlyUnknown: options.deferReadOnlyUnknown ?? false,
    reclaimRequiresDeathSignal: options.reclaimRequiresDeathSignal ?? false,
    // An unbounded lease has no heartbeat to fall silent (a tool's own lease is renewed, but the ledger cannot say how
    // long is too long): silence never counts, only an explicit signal. 2 x 0 made any silence a death.
    presumedDeadAfter:
      options.presumedDeadAfter == null
        ? leaseTtl > 0
          ? 2 * leaseTtl
          : Infinity
        : seconds("presumedDeadAfter", options.presumedDeadAfter, 0, true),
    presumedDeadAfterSet: options.presumedDeadAfter != null,
    predicates: options.predicates ?? [],
    reconciler: options.reconciler ?? null,
  }
  return {
    storage,
    store: new SafeStorage(storage),
    clock,
    owner,
    policy,
    receipts: options.receipts ?? null,
    warnOnce(key, message) {
      if (warned.has(key)) return
      warned.add(key)
      onWarning(message)
    },
    warn: onWarning,
  }
}
