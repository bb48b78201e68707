// The suite every ReceiptStore must pass. Runs in Node, workerd and Chromium: vitest APIs only.
import { describe, expect, it } from "vitest"
import { hmacReceiptSigner, ReceiptEmitter, type ReceiptStore, verifyReceipts } from "../../src/receipts.ts"

export interface ReceiptStoreFactoryResult {
  storage: ReceiptStore
  /** A second handle on the same store (another connection, client or tab). */
  peer?: ReceiptStore
}

export function testReceiptStore(
  name: string,
  factory: () => Promise<ReceiptStoreFactoryResult> | ReceiptStoreFactoryResult,
) {
  describe(`ReceiptStore conformance: ${name}`, () => {
    it("two handles appending concurrently keep one unforked chain per agent; delicate values still verify", async () => {
      const { storage, peer } = await factory()
      const emit = (store: ReceiptStore, agentId: string) =>
        new ReceiptEmitter({ signer: hmacReceiptSigner("conformance-key"), store, agentId })
      const writers = [
        emit(storage, "agent-1"),
        emit(peer ?? storage, "agent-1"),
        emit(peer ?? storage, "agent-2"),
      ]
      await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          (writers[i % 3] as ReceiptEmitter).emit({
            action: "t",
            actionKind: i % 2 ? "tool" : "task",
            requestId: `r${i}`,
            kwargs: { i },
            outputs: { n: [1, 2.5, -0, 1e21], note: "café ☕ 𝄞" },
            status: i % 5 ? "completed" : "failed",
            error: i % 5 ? null : "Error: x",
          }),
        ),
      )
      const all = await storage.list()
      expect(all).toHaveLength(24)
      const one = await storage.list({ agentId: "agent-1" })
      expect(one.map((r) => r.chain?.seq)).toEqual(Array.from({ length: 16 }, (_, i) => i))
      expect((await storage.list({ ledger: "agent-2" })).map((r) => r.chain?.seq)).toEqual([
        0, 1, 2, 3, 4, 5, 6, 7,
      ])
      expect(Object.is((one[0]?.outputs as { n: number[] } | undefined)?.n[2], -0)).toBe(true)
      expect(await verifyReceipts(all, { hmac: "conformance-key" }, { requireChain: true })).toMatchObject({
        ok: true,
        valid: 24,
      })
    })

    it("unchained receipts (chain: false) are stored as the original's records", async () => {
      const { storage } = await factory()
      const e = new ReceiptEmitter({
        signer: hmacReceiptSigner("k"),
        store: storage,
        agentId: "plain",
        chain: false,
      })
      await e.emit({ action: "a", actionKind: "task", requestId: "x", status: "completed" })
      const [r] = await storage.list({ agentId: "plain" })
      expect(r?.chain ?? null).toBeNull()
      expect(await verifyReceipts([r], { hmac: "k" })).toMatchObject({ ok: true })
    })
  })
}
