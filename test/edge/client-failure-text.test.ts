// RemoteLedger records a body's failure whose text cannot be made (a Symbol message, a throwing name), as the
// in-process ledger does: the caller gets its own error and the row is not left in flight for its lease.
import { describe, expect, it } from "vitest"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/app.ts"
import { RemoteLedger } from "../../src/edge/client.ts"

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const

const symbolMessage = () => Object.assign(new Error("x"), { message: Symbol("s") })
const throwingName = () =>
  Object.defineProperty(new Error("y"), "name", {
    get() {
      throw new Error("no name")
    },
  })

describe("RemoteLedger: a failure whose text cannot be made", () => {
  it.each([
    ["a Symbol message", symbolMessage],
    ["a name getter that throws", throwingName],
  ])("%s: recorded failed, the caller gets its own error, the retry runs", async (_, make) => {
    const storage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage, pollInterval: 0.005 })
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      app.fetch(new Request(input, init))) as typeof globalThis.fetch
    const warnings: string[] = []
    const remote = new RemoteLedger({
      baseUrl: "http://edge.test",
      fetch,
      pollTimeout: 0,
      onWarning: (m) => warnings.push(m),
    })
    const thrown = make()
    let runs = 0
    const send = remote.tool({ name: "send", binding }, async () => {
      if (++runs === 1) throw thrown
      return "sent"
    })
    await expect(send({ a: 1 }, { requestId: "r1" })).rejects.toBe(thrown)
    const states: string[] = []
    for await (const r of storage.list()) states.push(String(r.terminalOutcome))
    expect(states).toEqual(["FAILED_BEFORE_EFFECT"])
    expect(warnings).toEqual([])
    // In flight, the retry was LedgerPollTimeoutError until the lease lapsed; failed before any effect, it runs.
    await expect(send({ a: 1 }, { requestId: "r1" })).resolves.toBe("sent")
    expect(runs).toBe(2)
  })
})
