// The ledger's fast claim on the memory store (the fresh row is built only when it is written) must never bypass a
// tryClaimInflight that someone replaced: a subclass, an instance override (fault injection) or a Proxy sees every
// claim, and a failing one fails closed.
import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  type ClaimOptions,
  type LedgerEntry,
  LedgerStorageUnavailableError,
  MemoryLedgerStorage,
} from "../../../src/core/index.ts"

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const

async function callTwice(storage: MemoryLedgerStorage): Promise<number> {
  let runs = 0
  const ledger = new ActionLedger({ storage, onWarning: () => {} })
  const pay = ledger.tool({ name: "pay", binding }, async () => ++runs)
  await pay({}, { toolCallId: "c1" })
  await pay({}, { toolCallId: "c1" })
  return runs
}

describe("the memory store's lazy claim", () => {
  it("a subclass overriding tryClaimInflight sees the fresh call and the replay", async () => {
    const seen: string[] = []
    class Counting extends MemoryLedgerStorage {
      override tryClaimInflight(entry: LedgerEntry, leaseTtl: number, now: number, options?: ClaimOptions) {
        seen.push(entry.requestId)
        return super.tryClaimInflight(entry, leaseTtl, now, options)
      }
    }
    expect(await callTwice(new Counting())).toBe(1)
    expect(seen).toHaveLength(2)
  })

  it("a tryClaimInflight replaced on the instance is used, and its failure fails closed", async () => {
    const broken = new MemoryLedgerStorage()
    Object.assign(broken, { tryClaimInflight: () => Promise.reject(new Error("disk I/O error")) })
    await expect(callTwice(broken)).rejects.toThrow(LedgerStorageUnavailableError)
  })

  it("a Proxy around the store gets the plain claim (a private field cannot be read through it)", async () => {
    const seen: string[] = []
    const inner = new MemoryLedgerStorage()
    const proxy = new Proxy(inner, {
      get(target, key) {
        const v = Reflect.get(target, key, target)
        if (key === "tryClaimInflight")
          return (e: LedgerEntry, ...rest: [number, number, ClaimOptions?]) => {
            seen.push(e.requestId)
            return target.tryClaimInflight(e, ...rest)
          }
        return typeof v === "function" ? v.bind(target) : v
      },
    })
    expect(await callTwice(proxy)).toBe(1)
    expect(seen).toHaveLength(2)
  })

  it("the plain memory store takes the lazy path", () => {
    expect(MemoryLedgerStorage.claimsLazily(new MemoryLedgerStorage())).toBe(true)
    expect(MemoryLedgerStorage.claimsLazily({})).toBe(false)
  })
})
