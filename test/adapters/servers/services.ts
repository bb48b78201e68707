// What a test over every real store sets up for the whole file: Upstash's REST server and Postgres answering (or the
// file fails), the Neon HTTP emulation neon() is pointed at, a folder for file stores; all of it closed, dropped or
// removed after the file.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { neonConfig, type Pool } from "@neondatabase/serverless"
import { afterAll, beforeAll } from "vitest"
import { dropLedgerTable, requireUpstash } from "./env.ts"
import { neonPool, requirePostgres } from "./neon.ts"
import { type NeonHttpEmulation, startNeonHttpEmulation } from "./neon-http.ts"

export interface StoreServices {
  readonly pool: Pool
  /** A folder of this file's for file stores. */
  readonly root: string
  /** Neon tables to drop after the file. */
  readonly tables: string[]
  /** Run after the file, before the tables are dropped: clients to close, keys to delete. */
  readonly closers: Array<() => unknown>
}

/** Registers the file's beforeAll and afterAll; `label` names its folder. */
export function storeServices(label: string): StoreServices {
  const services: StoreServices = {
    pool: neonPool(),
    root: mkdtempSync(join(tmpdir(), `mycelium-${label}-`)),
    tables: [],
    closers: [],
  }
  let emu: NeonHttpEmulation | undefined
  beforeAll(async () => {
    await requireUpstash()
    await requirePostgres(services.pool)
    emu = await startNeonHttpEmulation()
    neonConfig.fetchEndpoint = emu.endpoint
  })
  afterAll(async () => {
    for (const c of services.closers) await c()
    for (const t of services.tables) await dropLedgerTable(services.pool, t)
    await services.pool.end()
    await emu?.stop()
    rmSync(services.root, { recursive: true, force: true })
  })
  return services
}
