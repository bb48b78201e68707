// Rows as the Python original's fail() leaves them: FAILED_BEFORE_EFFECT whatever the boundary (it labels a failure
// by the caller's word, not the row's). A Python worker sharing the ledger writes these; the stuck list must show the
// ones past not_crossed, which the gate hard-blocks.
import {
  ActionLedger,
  type LedgerStorage,
  type SideEffectBoundary,
  type ToolTransitionBindingInit,
} from "../../../src/core/index.ts"

export async function writePythonFailures(
  storage: LedgerStorage,
  rows: ReadonlyArray<readonly [requestId: string, boundary: SideEffectBoundary]>,
  binding: ToolTransitionBindingInit = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" },
): Promise<void> {
  const ledger = new ActionLedger({ storage, leaseRenewInterval: 0, onWarning: () => {} })
  const decision = { allowed: true, verdicts: [], deniedReasons: [] }
  for (const [requestId, boundary] of rows) {
    const c = await ledger.claim({ tool: "pay", binding, args: {}, decision, meta: { requestId } })
    await storage.set({
      ...c.entry,
      terminalOutcome: "FAILED_BEFORE_EFFECT",
      status: "failed",
      error: "gateway down",
      sideEffectBoundary: boundary,
      leaseUntil: null,
    })
  }
}
