// HttpLedgerStorage and ids over the API's MAX_ID (512 characters), well inside its body limit. The server refuses
// such a path with 400 invalid_path (a dispatch id in a claim's body with invalid_body), which the client reported as
// LedgerStorageUnavailableError: callers retried forever. The client now refuses them typed before sending, and reads
// and lookups of such ids answer "no row", as for text the API cannot keep.
import { describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { LedgerConfigError } from "../../src/core/index.ts"
import { MAX_ID } from "../../src/edge/body.ts"
import { expectIdRefusedUnsent } from "../adapters/id-refusals.ts"
import { paymentOverHttp, storeOverHttp } from "./payment-over-http.ts"

describe("HttpLedgerStorage and the API's id length", () => {
  it("a request id over the API's 512 characters is refused typed before any request, as a config error, not an outage", async () => {
    const { rows, pay, runs } = paymentOverHttp()
    // Before: LedgerStorageUnavailableError (400 invalid_path).
    const e = (await pay({ orderId: `o-${"x".repeat(600)}` }).catch((x: unknown) => x)) as Error
    expect([runs(), rows.size]).toEqual([0, 0])
    expect(`${e.name}: ${e.message}`.slice(0, 200)).toMatch(/^LedgerConfigError/)
    expect(e).toBeInstanceOf(LedgerConfigError)
  })

  it("every write of such an id is refused before sending; get and findByDispatchId answer no row", async () => {
    const { storage, requests } = storeOverHttp()
    const id = "x".repeat(MAX_ID + 1)
    await expectIdRefusedUnsent(storage, id, requests)
    expect(await storage.findByDispatchId(id)).toEqual([])
    expect(requests()).toBe(0)
  })

  it("a claim under a tool-call id over 512 characters is refused before sending (the API's body takes no longer)", async () => {
    const { storage, requests, rows } = storeOverHttp()
    const dispatchId = "c".repeat(MAX_ID + 1)
    const row = newEntry({ requestId: "r-1", tool: "t", owner: "w", kwargs: { tool_call_id: dispatchId } }, 1)
    await expect(
      storage.tryClaimInflight(row, 60, 1, { reclaimFence: null, dispatchId }),
    ).rejects.toBeInstanceOf(LedgerConfigError)
    expect([requests(), rows.size]).toEqual([0, 0])
  })

  it("ids of exactly 512 characters are kept, read and found", async () => {
    const { storage } = storeOverHttp()
    const id = "x".repeat(MAX_ID)
    const dispatchId = "c".repeat(MAX_ID)
    const row = newEntry({ requestId: id, tool: "t", owner: "w", kwargs: { tool_call_id: dispatchId } }, 1)
    expect((await storage.tryClaimInflight(row, 60, 1, { reclaimFence: null, dispatchId })).outcome).toBe(
      "claimed",
    )
    expect((await storage.get(id))?.requestId).toBe(id)
    expect((await storage.findByDispatchId(dispatchId)).map((e) => e.requestId)).toEqual([id])
  })
})
