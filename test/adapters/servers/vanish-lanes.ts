// One lane per real store for test/adapters/servers/vanish.ts: a client per worker, and what the world does to a row
// behind the ledger's back (an operator's DELETE, a Redis eviction, a restore from a backup, a Python worker's write),
// done on the store itself, never through the adapter.
import { renameSync, writeFileSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import { neon } from "@neondatabase/serverless"
import { entryFromRow, entryToRow } from "../../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../../src/adapters/file.ts"
import { HttpLedgerStorage } from "../../../src/adapters/http.ts"
import { NeonLedgerStorage } from "../../../src/adapters/neon.ts"
import { RedisLedgerStorage, RespConnection } from "../../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../../src/adapters/upstash.ts"
import { derivedBase } from "../../../src/adapters/upstash-kit.ts"
import { type Clock, type LedgerStorage, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { createLedgerApp } from "../../../src/edge/index.ts"
import { DATABASE_URL, REDIS_URL, upstashClient } from "./env.ts"
import type { StoreServices } from "./services.ts"

export interface VanishLane {
  readonly name: string
  /** A client of the store for one worker, on the test's clock where the store takes one. */
  client(clock: Clock): LedgerStorage
  /** The row's text where the adapter reads it first (for a backup), or null. */
  raw(id: string): Promise<string | null>
  /** Every copy of the row removed (an operator's cleanup; Redis: the row key and its tombstone). Null: impossible. */
  readonly drop: ((id: string) => Promise<void>) | null
  /** `json` stored as the row, as a restore or a Python worker writes it (Redis: the row key and the original's tombstone). */
  writeRaw(id: string, json: string): Promise<void>
  /** Redis and Upstash: only the row key goes (TTL expiry, eviction, a DEL of it); the tombstone stays. */
  readonly evict?: (id: string) => Promise<void>
  /** Redis and Upstash: only the row key is written (a restore of that one key); the tombstone keeps what it had. */
  readonly writeKeyOnly?: (id: string, json: string) => Promise<void>
  /** Before the first case (a table to make). */
  ready?(): Promise<void>
  close(): Promise<void>
}

/** The file store's JSON object, edited as another process would: whole file replaced by a rename. */
function fileRows(path: string) {
  const load = async (): Promise<Record<string, unknown>> => {
    try {
      return JSON.parse(await readFile(path, "utf8")) as Record<string, unknown>
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return {}
      throw e
    }
  }
  const save = (rows: Record<string, unknown>): void => {
    writeFileSync(`${path}.ext`, JSON.stringify(rows, null, 2))
    renameSync(`${path}.ext`, path)
  }
  return {
    raw: async (id: string) => {
      const row = (await load())[id]
      return row === undefined ? null : JSON.stringify(row)
    },
    drop: async (id: string) => {
      const rows = await load()
      delete rows[id]
      save(rows)
    },
    writeRaw: async (id: string, json: string) => {
      const rows = await load()
      rows[id] = JSON.parse(json)
      save(rows)
    },
  }
}

/** Redis (and the Upstash REST server, which keeps its keys in the same Redis) with the original's key layout. */
function redisKeys(prefix: string) {
  const conn = new RespConnection(REDIS_URL)
  const key = (id: string) => prefix + id
  const tomb = (id: string) => `${prefix.replace(/:+$/, "")}-tomb:${id}`
  // Ours: the same key as the original's under a prefix ending in ':'; without one a Python worker never writes it.
  const own = (id: string) => `${derivedBase(prefix)}tomb:${id}`
  return {
    raw: async (id: string) => (await conn.command("GET", key(id))) as string | null,
    drop: async (id: string) => {
      await conn.command("DEL", key(id), tomb(id), own(id))
    },
    writeRaw: async (id: string, json: string) => {
      await conn.command("SET", key(id), json)
      await conn.command("SET", tomb(id), json)
    },
    evict: async (id: string) => {
      await conn.command("DEL", key(id))
    },
    writeKeyOnly: async (id: string, json: string) => {
      await conn.command("SET", key(id), json)
    },
    close: async () => conn.close(),
  }
}

export function vanishLanes(services: StoreServices, tag: string): VanishLane[] {
  const { pool, root, tables } = services
  const neonRaw = (table: string) => ({
    raw: async (id: string) => {
      const r = await pool.query(`SELECT payload::text AS p FROM ${table} WHERE request_id = $1`, [id])
      return (r.rows[0]?.p as string | undefined) ?? null
    },
    drop: async (id: string) => {
      await pool.query(`DELETE FROM ${table} WHERE request_id = $1`, [id])
    },
    writeRaw: async (id: string, json: string) => {
      await pool.query(
        `INSERT INTO ${table} (request_id, payload) VALUES ($1, $2::jsonb)` +
          " ON CONFLICT (request_id) DO UPDATE SET payload = EXCLUDED.payload",
        [id, json],
      )
    },
  })
  const neonTable = (name: string) => {
    const table = `vanish_${name}_${tag}`
    return {
      table,
      ready: async () => {
        await new NeonLedgerStorage({ pool, table }).migrate()
        tables.push(table)
      },
      close: async () => {},
    }
  }
  const ws = neonTable("ws")
  const http = neonTable("http")
  const memory = new MemoryLedgerStorage()
  const filePath = join(root, "vanish", "ledger.json")
  const httpPath = join(root, "vanish-http", "ledger.json")
  const redis = redisKeys(`mycelium-test:${tag}:redis:`)
  const upstash = redisKeys(`mycelium-test:${tag}:up:`)
  // Without ':' the original's tombstone is not ours: a Python worker's write (writeRaw) leaves ours behind.
  const redisNc = redisKeys(`mycelium-test:${tag}:rnc-`)
  const upstashNc = redisKeys(`mycelium-test:${tag}:unc-`)
  return [
    {
      name: "memory",
      client: () => memory,
      raw: async (id) => {
        const row = await memory.get(id)
        return row && JSON.stringify(entryToRow(row))
      },
      // Nothing outside the process reaches its rows; set() refuses an older fence.
      drop: null,
      writeRaw: (_id, json) => memory.set(entryFromRow(JSON.parse(json) as Record<string, unknown>)),
      close: async () => {},
    },
    {
      name: "file",
      client: () => new FileLedgerStorage(filePath, { fsync: false }),
      ...fileRows(filePath),
      close: async () => {},
    },
    {
      name: "redis",
      client: () => new RedisLedgerStorage({ url: REDIS_URL, prefix: `mycelium-test:${tag}:redis:` }),
      ...redis,
    },
    {
      name: "upstash",
      client: (clock) =>
        new UpstashLedgerStorage({
          redis: upstashClient(),
          prefix: `mycelium-test:${tag}:up:`,
          now: () => clock.now(),
        }),
      ...upstash,
    },
    {
      name: "redis, prefix without ':'",
      client: () => new RedisLedgerStorage({ url: REDIS_URL, prefix: `mycelium-test:${tag}:rnc-` }),
      ...redisNc,
    },
    {
      name: "upstash, prefix without ':'",
      client: (clock) =>
        new UpstashLedgerStorage({
          redis: upstashClient(),
          prefix: `mycelium-test:${tag}:unc-`,
          now: () => clock.now(),
        }),
      ...upstashNc,
    },
    {
      name: "neon-ws",
      client: () => new NeonLedgerStorage({ pool, table: ws.table }),
      ...neonRaw(ws.table),
      ready: ws.ready,
      close: ws.close,
    },
    {
      name: "neon-http",
      client: () => new NeonLedgerStorage({ sql: neon(DATABASE_URL), table: http.table }),
      ...neonRaw(http.table),
      ready: http.ready,
      close: http.close,
    },
    {
      // The edge API over a file store: the server's clock is the test's, so both agree on leases.
      name: "http",
      client: (clock) => {
        const app = createLedgerApp({ storage: new FileLedgerStorage(httpPath, { fsync: false }), clock })
        const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
          app.fetch(new Request(input, init))) as typeof globalThis.fetch
        return new HttpLedgerStorage({ url: "http://ledger.local", fetch })
      },
      ...fileRows(httpPath),
      close: async () => {},
    },
  ]
}
