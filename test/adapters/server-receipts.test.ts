// Receipt stores on the real local Redis (Upstash REST) and Postgres (neon driver), two clients each.
import { afterAll } from "vitest"
import { NeonReceiptStore } from "../../src/adapters/neon-receipts.ts"
import { UpstashReceiptStore } from "../../src/adapters/upstash-receipts.ts"
import { testReceiptStore } from "../../src/conformance.ts"
import type { ReceiptStore } from "../../src/receipts.ts"
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
  testReceiptStore(backend, async () => {
    const [storage, peer] = await stores(backend)
    return { storage, peer }
  })
}
