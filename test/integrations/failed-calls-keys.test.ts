// The failed-call memory keeps up to 10,000 calls per tool for the ledger's life. Keyed by the arguments' whole text,
// 20 KB arguments (an email body) held about 200 MB: long keys are kept as their SHA-256, and still tell calls apart.
import { describe, expect, it } from "vitest"
import { ActionLedger, LedgerHardBlockError, MemoryLedgerStorage } from "../../src/core/index.ts"
import { failedCallsOf } from "../../src/integrations/failed-calls.ts"

describe("failed-call memory keys", () => {
  const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
  const failed = failedCallsOf(ledger, "send_email")
  const body = "x".repeat(20_000)
  const held = (args: unknown, toolCallId: string) => {
    const call = failed.held({ threadId: "t1", toolCallId }, args, "non_idempotent_mutate")
    if (!call) throw new Error("not held")
    return call
  }

  it("a long key is a digest of its text: same arguments, same key; a change at the end, another key", () => {
    const a = held({ body, to: "a@x" }, "c1")
    expect(a.key.length).toBeLessThan(100)
    expect(held({ to: "a@x", body }, "c2").key).toBe(a.key)
    expect(held({ body: `${body}y`, to: "a@x" }, "c3").key).not.toBe(a.key)
    expect(held({ to: "a@x" }, "c4").key).toBe('["",{"to":"a@x"}]')
  })

  it("still holds the retry of a failed long call under a new tool-call id", async () => {
    const first = held({ body, to: "b@x" }, "call_1")
    failed.remember(first, "req-1")
    const claimed = await ledger.claim({ tool: "send_email", requestId: "req-1" })
    expect(claimed.owned).toBe(true)
    await ledger.markUnknown("req-1", "gateway timed out", { fence: claimed.entry.fence })
    await expect(failed.check(ledger, held({ body, to: "b@x" }, "call_2"))).rejects.toBeInstanceOf(
      LedgerHardBlockError,
    )
    expect(await failed.check(ledger, held({ body, to: "c@x" }, "call_3"))).toEqual({ kind: "run" })
  })
})
