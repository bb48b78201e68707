// The store a crash test uses, by name, so the killed child and the restarted parent open the same ledger.
import { FileLedgerStorage } from "../../../src/adapters/file.ts"
import { NeonLedgerStorage } from "../../../src/adapters/neon.ts"
import { UpstashLedgerStorage } from "../../../src/adapters/upstash.ts"
import type { LedgerStorage } from "../../../src/core/index.ts"
import { upstashClient } from "../servers/env.ts"
import { neonPool } from "../servers/neon.ts"

export type Backend = "file" | "upstash" | "neon"

/** `where` is the file path, the Redis key prefix tag or the Postgres table name. */
export async function openStorage(
  backend: Backend,
  where: string,
): Promise<{ storage: LedgerStorage; close(): Promise<void> }> {
  if (backend === "file") return { storage: new FileLedgerStorage(where), close: async () => {} }
  if (backend === "upstash") {
    const storage = new UpstashLedgerStorage({
      redis: upstashClient(),
      prefix: `mycelium-crash:${where}:action:`,
    })
    return { storage, close: async () => {} }
  }
  const pool = neonPool(undefined, 4)
  const storage = new NeonLedgerStorage({ pool, table: where })
  await storage.migrate()
  return { storage, close: () => pool.end() }
}
