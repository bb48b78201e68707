// Receipt stores on the real local Redis (Upstash REST) and Postgres (neon driver): concurrent appenders from two
// clients keep one unforked chain, and values whose JSON form is delicate (-0.0, non-ASCII) still verify.
import { afterAll, describe, expect, it } from "vitest"
import { NeonReceiptStore } from "../../src/adapters/neon-receipts.ts"
import { UpstashReceiptStore } from "../../src/adapters/upstash-receipts.ts"
import { hmacReceiptSigner, ReceiptEmitter, type ReceiptStore, verifyReceipts } from "../../src/core/index.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const pools = [neonPool(undefined, 4), neonPool(undefined, 4)] as const
const tables: string[] = []
afterAll(async () => {
  for (const t of tables) await pools[0].query(`DROP TABLE IF EXISTS ${t}`)
  await Promise.all(pools.map((p) => p.end()))
})

async function stores(backend: "upstash" | "neon"): Promise<[ReceiptStore, ReceiptStore]> {
  if (backend === "upstash") {
    await requireUpstash()
    const prefix = `mycelium-test:${runTag("rcpt")}:receipts:`
    return [
      new UpstashReceiptStore({ redis: upstashClient(), prefix }),
      new UpstashReceiptStore({ redis: upstashClient(), prefix }),
    ]
  }
  await requirePostgres(pools[0])
  const table = `rcpt_${runTag("t").replaceAll("-", "_")}`.toLowerCase()
  tables.push(table)
  const a = new NeonReceiptStore({ pool: pools[0], table })
  await a.migrate()
  return [a, new NeonReceiptStore({ pool: pools[1], table })]
}

for (const backend of ["upstash", "neon"] as const) {
  describe(`${backend} receipt store`, () => {
    it("two clients appending concurrently keep one verifiable chain", async () => {
      const [a, b] = await stores(backend)
      const emit = (store: ReceiptStore) =>
        new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "srv" })
      const ea = emit(a)
      const eb = emit(b)
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? ea : eb).emit({
            action: "t",
            actionKind: "tool",
            requestId: `r${i}`,
            outputs: { n: [1, 2.5, -0], note: "café ☕" },
            status: "completed",
          }),
        ),
      )
      const listed = await a.list()
      expect(listed.map((r) => r.chain?.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i))
      expect(await verifyReceipts(listed, { hmac: "k" }, { requireChain: true })).toMatchObject({
        ok: true,
        valid: 20,
      })
    })
  })
}
