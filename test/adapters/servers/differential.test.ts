// Seeded differential run over the ledger stores (helpers in differential.ts): the memory store is the reference, and
// file, Redis (RESP), Upstash (REST), Neon (WebSocket Pool and HTTP neon()) and HTTP (the edge app over memory) take
// the same steps, each under its own prefix, table or file. A divergence fails with the seed and step to reproduce:
//   DIFF_SEED=<seed> DIFF_SEEDS=1 npx vitest run --project node test/adapters/servers/differential.test.ts
// DIFF_SEEDS (sequences, default 4) and DIFF_STEPS (steps each, default 200) make it run longer.
import { join } from "node:path"
import { neon } from "@neondatabase/serverless"
import { describe, expect, it } from "vitest"
import { FileLedgerStorage } from "../../../src/adapters/file.ts"
import { NeonLedgerStorage } from "../../../src/adapters/neon.ts"
import { RedisLedgerStorage } from "../../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../../src/adapters/upstash.ts"
import { MemoryLedgerStorage } from "../../../src/core/index.ts"
import { overHttp } from "../../edge/over-http.ts"
import {
  answer,
  type Divergence,
  finalRows,
  firstDifference,
  type Lane,
  lane,
  stepLane,
  steps,
} from "./differential.ts"
import { DATABASE_URL, REDIS_URL, runTag, upstashClient } from "./env.ts"
import { storeServices } from "./services.ts"

const FIRST_SEED = Number(process.env.DIFF_SEED ?? 1)
const SEEDS = Number(process.env.DIFF_SEEDS ?? 4)
const STEPS = Number(process.env.DIFF_STEPS ?? 200)
const T0 = 1_800_000_000.25

const TAG = runTag("diff").replace(/-/g, "_")
const { pool, root, tables, closers } = storeServices("diff")

/** The stores under test for one sequence, each in a namespace of its own. */
async function lanes(seed: number): Promise<Lane[]> {
  const tag = `${TAG}_s${seed}`
  const ws = new NeonLedgerStorage({ pool, table: `diff_ws_${tag}` })
  const http = new NeonLedgerStorage({ sql: neon(DATABASE_URL), table: `diff_http_${tag}` })
  for (const s of [ws, http]) {
    await s.migrate()
    tables.push(s.table)
  }
  const redis = new RedisLedgerStorage({ url: REDIS_URL, prefix: `mycelium-test:${tag}:redis:` })
  closers.push(() => redis.close())
  return [
    lane("file", new FileLedgerStorage(join(root, `s${seed}`, "ledger.json"), { fsync: false })),
    lane("redis", redis),
    lane("upstash", new UpstashLedgerStorage({ redis: upstashClient(), prefix: `mycelium-test:${tag}:up:` })),
    lane("neon (WebSocket Pool)", ws),
    lane("neon (HTTP neon())", http),
    lane(
      "http (edge app over memory)",
      overHttp(() => new MemoryLedgerStorage()),
    ),
  ]
}

describe("differential: every store answers each step as the memory store does", () => {
  for (let seed = FIRST_SEED; seed < FIRST_SEED + SEEDS; seed++) {
    it(`seed ${seed}, ${STEPS} steps`, { timeout: 120_000 }, async () => {
      const all = await lanes(seed)
      // The generator's own view of the rows: a memory store taking every step.
      const driver = new MemoryLedgerStorage()
      const clock = { now: T0 }
      const found: Divergence[] = []
      let index = 0
      for await (const step of steps(seed, STEPS, driver, clock)) {
        await answer(driver, step, new Map())
        const results = await Promise.all(all.map((l) => stepLane(l, step, seed, index)))
        for (const d of results) if (d) found.push(d)
        index++
      }
      const rows: string[] = []
      for (const l of all) for (const f of await finalRows(l)) rows.push(`${l.name}: ${f}`)
      const report = found.map(
        (d) =>
          `${d.store}, seed ${d.seed} step ${d.index} ${d.step.slice(0, 400)}: ${firstDifference(d.got, d.allowed[0])}`,
      )
      expect([...report, ...rows], `DIFF_SEED=${seed} DIFF_SEEDS=1 reproduces`).toEqual([])
    })
  }
})
