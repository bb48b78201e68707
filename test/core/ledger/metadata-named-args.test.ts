// An argument named like metadata (thread_id, run_id, node) is an argument here, not scope, but it is stored in the
// row's kwargs, where the original (and this package, reading a stored row) takes it for the row's scope. The
// sibling check compared that row scope with the call's metadata scope only, so a drifted re-send, or a second key
// for the same call (a Python worker keys such an argument as scope), skipped the check and the body ran again.
import { describe, expect, it } from "vitest"
import { ActionLedger, LedgerIdentityConflictError } from "../../../src/core/index.ts"

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const

function payer() {
  const ledger = new ActionLedger({ onWarning: () => {} })
  const paid: number[] = []
  const pay = ledger.tool({ name: "pay", binding }, async (a: { amount: number; thread_id?: string }) => {
    paid.push(a.amount)
    return { paid: a.amount }
  })
  return { ledger, pay, paid }
}

describe("arguments named like metadata and the identity checks", () => {
  it("a drifted re-send of a tool-call id is refused when the arguments hold a thread_id", async () => {
    const { pay, paid } = payer()
    await pay({ thread_id: "t-42", amount: 5 }, { toolCallId: "call_1" })
    await expect(pay({ thread_id: "t-42", amount: 6 }, { toolCallId: "call_1" })).rejects.toBeInstanceOf(
      LedgerIdentityConflictError,
    )
    expect(paid).toEqual([5])
  })

  it("the same call keyed in the argument's scope elsewhere (as the original keys it) is not run again", async () => {
    const { pay, paid } = payer()
    // The first key takes the thread from the call's metadata, as the original takes it from the argument.
    await pay({ thread_id: "t-42", amount: 5 }, { toolCallId: "c1", threadId: "t-42" })
    await expect(pay({ thread_id: "t-42", amount: 5 }, { toolCallId: "c1" })).rejects.toBeInstanceOf(
      LedgerIdentityConflictError,
    )
    expect(paid).toEqual([5])
  })

  it("a model's thread_id argument does not reach another thread's row (no replay of another user's result)", async () => {
    const ledger = new ActionLedger({ onWarning: () => {} })
    const lookup = ledger.tool({ name: "lookup" }, async (a: { who: string; thread_id?: string }) => ({
      secret: `of ${a.who}`,
    }))
    expect(await lookup({ who: "B" }, { toolCallId: "call_0", threadId: "B" })).toEqual({ secret: "of B" })
    await expect(lookup({ who: "B", thread_id: "B" }, { toolCallId: "call_0" })).rejects.toBeInstanceOf(
      LedgerIdentityConflictError,
    )
  })
})

describe("call metadata from JavaScript", () => {
  it("null metadata is no metadata, not a bare TypeError", async () => {
    const { pay, paid } = payer()
    const untyped = pay as unknown as (a: object, m: null) => Promise<unknown>
    expect(await untyped({ amount: 3 }, null)).toEqual({ paid: 3 })
    expect(paid).toEqual([3])
  })
})
