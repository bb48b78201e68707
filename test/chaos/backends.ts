// The stores the chaos test runs on, by name: where a run's ledger lives, how the parent and a worker open it, and
// what is left to remove from a shared server afterwards. Imported by the parent and bundled into the worker, so
// both open one store the same way. A run's task store (task-chaos) lives beside its ledger: another file, key
// prefix or table, removed by the same cleanup.
import { dirname, join } from "node:path"
import type { Pool } from "@neondatabase/serverless"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import { RedisLedgerStorage, RespConnection, upstashShape } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { UpstashTaskStore } from "../../src/adapters/upstash-tasks.ts"
import type { LedgerStorage } from "../../src/core/index.ts"
import type { TaskStore } from "../../src/tasks.ts"
import {
  dropKeys,
  dropLedgerTable,
  REDIS_URL,
  requireUpstash,
  SERVICES_HINT,
  upstashClient,
} from "../adapters/servers/env.ts"
import { neonPool, requirePostgres } from "../adapters/servers/neon.ts"

/**
 * `pool` with `n` connections open. A worker says it is ready once its store is: a Postgres connection through the
 * WebSocket proxy takes a second or more to open on a loaded machine, and a worker killed before it ever had one
 * never ran a call to be killed inside (the Neon runs then had next to no kills inside a call, nor takeovers).
 */
async function connected(pool: Pool, n: number): Promise<Pool> {
  const clients = await Promise.all(Array.from({ length: n }, () => pool.connect()))
  for (const c of clients) c.release()
  return pool
}

export type ChaosBackendName = "file" | "upstash" | "neon" | "redis"

export interface OpenedStore {
  readonly storage: LedgerStorage
  close(): Promise<void>
}

export interface OpenedTaskStore {
  readonly storage: TaskStore
  close(): Promise<void>
}

export interface ChaosBackend {
  /** Fails loudly when the server is not answering (never a skip). */
  require(): Promise<void>
  /** This run's ledger: a file path, a key prefix tag or a table name. */
  where(tag: string, dir: string): string
  /** `setup` is the parent's first open (it creates the table); workers open what it made. */
  open(where: string, setup: boolean): Promise<OpenedStore>
  /** The run's task store, opened as `open` opens its ledger. */
  openTasks(where: string, setup: boolean): Promise<OpenedTaskStore>
  /** Removes the run's rows (ledger and tasks) from a shared server. */
  cleanup(where: string): Promise<void>
}

const prefix = (where: string) => `${where}:action:`
const taskPrefix = (where: string) => `${where}:task:`
const taskTable = (where: string) => `${where}_tasks`
const nothing = async () => {}

export const backends: Record<ChaosBackendName, ChaosBackend> = {
  file: {
    require: nothing,
    where: (tag, dir) => join(dir, tag, "ledger.json"),
    open: async (where) => ({ storage: new FileLedgerStorage(where), close: nothing }),
    openTasks: async (where) => ({
      storage: new FileTaskStore(join(dirname(where), "tasks.json")),
      close: nothing,
    }),
    cleanup: nothing, // the parent's temporary directory goes as a whole
  },
  upstash: {
    require: requireUpstash,
    where: (tag) => `mycelium-chaos:${tag}`,
    open: async (where) => ({
      storage: new UpstashLedgerStorage({ redis: upstashClient(), prefix: prefix(where) }),
      close: nothing,
    }),
    openTasks: async (where) => ({
      storage: new UpstashTaskStore({ redis: upstashClient(), prefix: taskPrefix(where) }),
      close: nothing,
    }),
    cleanup: async (where) => {
      const redis = upstashClient()
      const keys = await redis.keys(`${where}*`)
      if (keys.length) await redis.del(...keys)
    },
  },
  neon: {
    require: async () => {
      const pool = neonPool(undefined, 1)
      try {
        await requirePostgres(pool)
      } finally {
        await pool.end()
      }
    },
    where: (tag) => tag.replace(/[^a-z0-9]/g, "_"),
    open: async (where, setup) => {
      // A worker runs 3 calls at once, each renewing its lease beside its writes.
      const pool = await connected(neonPool(undefined, setup ? 10 : 4), setup ? 1 : 4)
      const storage = new NeonLedgerStorage({ pool, table: where })
      if (setup) await storage.migrate()
      return { storage, close: () => pool.end() }
    },
    openTasks: async (where, setup) => {
      // A worker runs 3 tasks at once, each renewing its lease while its body runs.
      const pool = await connected(neonPool(undefined, setup ? 10 : 4), setup ? 1 : 4)
      const storage = new NeonTaskStore({ pool, table: taskTable(where) })
      if (setup) await storage.migrate()
      return { storage, close: () => pool.end() }
    },
    cleanup: async (where) => {
      const pool = neonPool(undefined, 1)
      try {
        await dropLedgerTable(pool, where)
        await pool.query(`DROP TABLE IF EXISTS ${taskTable(where)}`)
      } finally {
        await pool.end()
      }
    },
  },
  redis: {
    require: async () => {
      const conn = new RespConnection(REDIS_URL, 2000)
      try {
        await conn.command("PING")
      } catch (e) {
        throw new Error(`Redis at ${REDIS_URL} is not answering (${String(e)}); ${SERVICES_HINT}`)
      } finally {
        conn.close()
      }
    },
    where: (tag) => `mycelium-chaos:${tag}`,
    open: async (where) => {
      const storage = new RedisLedgerStorage({ url: REDIS_URL, prefix: prefix(where) })
      return { storage, close: () => storage.close() }
    },
    openTasks: async (where) => {
      const conn = new RespConnection(REDIS_URL)
      const storage = new UpstashTaskStore({ redis: upstashShape(conn), prefix: taskPrefix(where) })
      return { storage, close: async () => conn.close() }
    },
    cleanup: (where) => dropKeys(`${where}*`),
  },
}
