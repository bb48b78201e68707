// Per adapter, against the local services (`eval "$(bash scripts/services.sh env)"`): round trips and time per
// call for a fresh ledgered call (claim, sideEffect boundary, completion) and for a replay of a completed call.
// Round trips are counted at the transport: fetch() requests for Upstash and Neon HTTP, pool.query() for Neon
// over WebSocket. The file store is measured with 100, 1,000 and 10,000 rows already stored.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { neon, neonConfig } from "@neondatabase/serverless"
import { newEntry } from "../src/adapter-kit.ts"
import { FileLedgerStorage } from "../src/adapters/file.ts"
import { NeonLedgerStorage } from "../src/adapters/neon.ts"
import { RedisLedgerStorage } from "../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../src/adapters/upstash.ts"
import { ActionLedger, type LedgerStorage, MemoryLedgerStorage } from "../src/core/index.ts"
import "../src/node.ts"
import { DATABASE_URL, dropLedgerTable, upstashClient } from "../test/adapters/servers/env.ts"
import { neonPool, requirePostgres } from "../test/adapters/servers/neon.ts"
import { startNeonHttpEmulation } from "../test/adapters/servers/neon-http.ts"
import { seededFile } from "./fixtures.ts"
import { fmt, microsPerCall, row } from "./timing.ts"

const binding = { agentId: "bench", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
const run = `${process.pid}_${Date.now().toString(36)}`

let trips = 0
const realFetch = globalThis.fetch
globalThis.fetch = ((...a: Parameters<typeof fetch>) => {
  trips++
  return realFetch(...a)
}) as typeof fetch

const base = { fresh: 0 }
/** `counted`: the adapter talks over a transport the counters see; the in-process stores have no round trips. */
async function measure(label: string, storage: LedgerStorage, n: number, counted = true): Promise<void> {
  const ledger = new ActionLedger({ storage, leaseTtl: 60, onWarning: () => {} })
  const pay = ledger.tool({ name: "send_payment", binding }, async (a: { amount: number }, tx) =>
    tx.sideEffect(async () => ({ ok: true, amount: a.amount })),
  )
  const tag = `${label.replace(/\W+/g, "-")}-${run}`
  const warm = Math.min(20, n)
  trips = 0
  let k = 0
  const fresh = await microsPerCall(n, (i) => pay({ amount: i }, { toolCallId: `${tag}-${k++}` }), warm)
  const freshTrips = trips / (n + warm)
  await pay({ amount: 1 }, { toolCallId: `${tag}-replayed` })
  trips = 0
  const replay = await microsPerCall(n, () => pay({ amount: 1 }, { toolCallId: `${tag}-replayed` }), warm)
  const replayTrips = trips / (n + warm)
  if (label.startsWith("memory")) base.fresh = fresh
  row(
    label,
    fmt(fresh / 1000, 3),
    fmt(replay / 1000, 3),
    counted ? fmt(freshTrips, 1) : "-",
    counted ? fmt(replayTrips, 1) : "-",
    `${(fresh / base.fresh).toFixed(0)}x`,
  )
}

row("adapter", "fresh ms", "replay ms", "trips/fresh", "trips/replay", "fresh/memory")
await measure("memory", new MemoryLedgerStorage(), 5000, false)

const dir = mkdtempSync(join(tmpdir(), "mycelium-bench-servers-"))
try {
  for (const rows of [100, 1000, 10_000]) {
    for (const fsync of [true, false]) {
      const s = new FileLedgerStorage(seededFile(dir, rows, String(fsync)), { fsync })
      await measure(
        `file (${tmpdir()}), ${rows} rows, fsync ${fsync ? "on" : "off"}`,
        s,
        rows > 1000 ? 50 : 200,
        false,
      )
      await s.close()
    }
  }
  // Shared between processes, a store re-reads the file another one replaced, then its first write takes each
  // untouched row's text from what it read (the original's numbers stay as written; docs/python-differences.md).
  for (const rows of [1000, 10_000]) {
    const path = seededFile(dir, rows, "reload")
    const bytes = readFileSync(path)
    const s = new FileLedgerStorage(path, { fsync: false })
    const times: number[] = []
    for (let i = 0; i < 15; i++) {
      writeFileSync(path, bytes)
      const t = performance.now()
      await s.get("seed-00001")
      await s.set(newEntry({ requestId: `reload-${i}`, tool: "t" }, 1))
      times.push(performance.now() - t)
    }
    await s.close()
    times.sort((a, b) => a - b)
    console.log(
      `file, ${rows} rows (${(bytes.length / 1e6).toFixed(1)} MB), replaced by another process: ` +
        `re-read + one write ${fmt(times[7] as number)} ms (median of 15, fsync off)`,
    )
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}

const prefix = `mycelium-bench:${run}:action:`
await measure(
  "upstash (REST server -> local redis)",
  new UpstashLedgerStorage({ redis: upstashClient(), prefix }),
  300,
)
{
  const redis = upstashClient()
  const keys = await redis.keys(`mycelium-bench:${run}*`)
  if (keys.length) await redis.del(...keys)
}

// Plain Redis over TCP: round trips are the RESP commands its connection sends.
{
  const s = new RedisLedgerStorage({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", prefix })
  const command = s.connection.command.bind(s.connection)
  s.connection.command = (...a: Parameters<typeof command>) => {
    trips++
    return command(...a)
  }
  try {
    await measure("redis (RESP/TCP -> local redis)", s, 300)
    s.connection.command = command
    const keys = (await command("KEYS", `mycelium-bench:${run}*`)) as string[]
    if (keys.length) await command("DEL", ...keys)
  } finally {
    await s.close()
  }
}

// Neon over WebSocket: round trips are the pool's queries (the adapter sends one statement per query).
{
  const pool = neonPool()
  await requirePostgres(pool)
  const table = `mycelium_bench_ws_${run}`
  const s = new NeonLedgerStorage({ pool, table })
  await s.migrate()
  const query = pool.query.bind(pool)
  pool.query = ((...a: Parameters<typeof pool.query>) => {
    trips++
    return query(...a)
  }) as typeof pool.query
  try {
    await measure("neon (WebSocket Pool -> local postgres)", s, 300)
  } finally {
    pool.query = query
    await dropLedgerTable(pool, table)
    await pool.end()
  }
}

// Neon's HTTP neon() function, against the local EMULATION of its /sql endpoint (Neon's proxy is not installable).
{
  const emu = await startNeonHttpEmulation()
  neonConfig.fetchEndpoint = emu.endpoint
  const sql = neon(DATABASE_URL)
  const table = `mycelium_bench_http_${run}`
  const s = new NeonLedgerStorage({ sql, table })
  try {
    await s.migrate()
    await measure("neon (HTTP neon() -> /sql emulation -> postgres)", s, 200)
  } finally {
    await dropLedgerTable(sql, table)
    await emu.stop()
  }
}
