import type { JsonValue } from "./canonical.ts"
import type { LedgerEntry } from "./entry.ts"
import type { ReconcileStatus } from "./enums.ts"

/** What a provider says about an ambiguous transition. */
export interface ReconcileResult {
  readonly status: ReconcileStatus
  readonly result?: JsonValue
}

export const ReconcileResult = {
  completed: (result: JsonValue = null): ReconcileResult => ({ status: "COMPLETED", result }),
  notExecuted: (): ReconcileResult => ({ status: "NOT_EXECUTED" }),
  unknown: (): ReconcileResult => ({ status: "UNKNOWN" }),
}

/**
 * Asks the provider whether the operation behind `entry.externalOperationRef` happened. Must be read-only.
 * Only consulted for rows with an external operation ref; a throw counts as UNKNOWN.
 */
export interface Reconciler {
  reconcile(entry: LedgerEntry): Promise<ReconcileResult> | ReconcileResult
}

/** What a decision predicate sees before a transition is claimed. */
export interface DecisionIntent {
  readonly tool: string
  readonly requestId: string
  readonly args: Readonly<Record<string, unknown>>
  readonly sideEffectClass: string | null
}

export type PredicateVerdict = boolean | { readonly allowed: boolean; readonly reason?: string }

/** A named policy check. Denials happen before any claim, so a corrected retry is never poisoned. */
export interface DecisionPredicate {
  readonly name: string
  check(intent: DecisionIntent): PredicateVerdict | Promise<PredicateVerdict>
}
