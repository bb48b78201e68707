// test/core/ledger/stored-expired.test.ts's scenarios (test/core/ledger/stored-expired.ts) over the server stores: a
// row stored as EXPIRED itself (a legacy row, a field repair of one) is hard-blocked once, marked dead and released by
// each store's compare-and-set as by memory's.
import { join } from "node:path"
import { neon } from "@neondatabase/serverless"
import { describe } from "vitest"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import type { LedgerStorage } from "../../src/core/index.ts"
import { expiredRowScenarios } from "../core/ledger/stored-expired.ts"
import { DATABASE_URL, REDIS_URL, runTag, upstashClient } from "./servers/env.ts"
import { storeServices } from "./servers/services.ts"

const TAG = runTag("expired").replace(/-/g, "_")
const { pool, root, tables, closers } = storeServices("expired")
let n = 0

const stores: Array<[string, () => Promise<LedgerStorage>]> = [
  ["file", async () => new FileLedgerStorage(join(root, `l${n++}`, "ledger.json"), { fsync: false })],
  [
    "redis",
    async () => {
      const s = new RedisLedgerStorage({ url: REDIS_URL, prefix: `mycelium-test:${TAG}:${n++}:` })
      closers.push(() => s.close())
      return s
    },
  ],
  [
    "upstash",
    async () => new UpstashLedgerStorage({ redis: upstashClient(), prefix: `mycelium-test:${TAG}:${n++}:` }),
  ],
  [
    "neon (Pool)",
    async () => {
      const s = new NeonLedgerStorage({ pool, table: `exp_ws_${TAG}_${n++}` })
      await s.migrate()
      tables.push(s.table)
      return s
    },
  ],
  [
    "neon (HTTP)",
    async () => {
      const s = new NeonLedgerStorage({ sql: neon(DATABASE_URL), table: `exp_http_${TAG}_${n++}` })
      await s.migrate()
      tables.push(s.table)
      return s
    },
  ],
]

describe.each(stores)("a row stored as EXPIRED, in %s", (_name, make) => {
  expiredRowScenarios(make)
})
