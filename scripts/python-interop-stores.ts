// The shared stores `npm run interop:python` runs its checks on: the original's file layout always, and its Redis keys
// and Postgres tables when REDIS_URL / DATABASE_URL name a server (`bash scripts/services.sh start` starts both).
// Each run uses its own prefix and tables, so a rerun never reads an earlier run's rows.
import { spawnSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import pg from "pg"
import { FileLedgerStorage } from "../src/adapters/file.ts"
import { FileTaskStore } from "../src/adapters/file-tasks.ts"
import { NeonLedgerStorage } from "../src/adapters/neon.ts"
import { NeonTaskStore } from "../src/adapters/neon-tasks.ts"
import { RedisLedgerStorage, RespConnection, upstashShape } from "../src/adapters/redis.ts"
import { UpstashTaskStore } from "../src/adapters/upstash-tasks.ts"
import type { LedgerStorage } from "../src/core/index.ts"
import type { TaskStore } from "../src/core/tasks/store.ts"

/**
 * The child environment for the original: its source first, then any PYTHONPATH already set (where Debian's
 * python3-redis and python3-psycopg are, for the Redis and Postgres stores; docs/python-differences.md).
 */
export const pythonEnv = (src: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...process.env,
  ...extra,
  PYTHONPATH: [src, process.env.PYTHONPATH].filter(Boolean).join(":"),
})

/** What one call or step printed as its last line, on either side. */
export interface Outcome {
  executed: number
  result: unknown
  error: string | null
  message: string | null
}

/** The outcome a child printed last; throws with its stderr when it printed none. */
export function outcomeOf(stdout: string, stderr: string, who: string): Outcome {
  const line = stdout.trim().split("\n").at(-1)
  if (!line) throw new Error(`${who} printed nothing: ${stderr.trim().split("\n").slice(-3).join(" ")}`)
  return JSON.parse(line) as Outcome
}

export type StoreKind = "file" | "redis" | "postgres"

/** One shared store, as both implementations open it. */
export interface SharedStore {
  readonly kind: StoreKind
  /** The action ledger, as `original-interop.py` takes it (JSON). */
  readonly spec: Record<string, string>
  /** The task ledger, as `original-task.py` takes it (JSON). */
  readonly taskSpec: Record<string, string>
  /** The `storage:` keys of `action_ledger` and `task_ledger` in a mycelium.yaml. */
  readonly yaml: { ledger: string; tasks: string }
  /** The row keys as the backend lists them (file keys, Redis keys without the prefix, the tables' request_id). */
  keys(of: "ledger" | "tasks"): Promise<string[]>
  /** Sets the store up before the checks; an error text when it cannot be. */
  prepare?(src: string): Promise<string | null>
  close(): Promise<void>
}

/** This package's ledger on a store `spec` names (in the child worker and for the row count). */
export function ledgerOf(spec: Record<string, string>): LedgerStorage & { close?(): Promise<void> } {
  if (spec.kind === "redis")
    // The original keeps no dispatch index: only a scan sees the rows it claimed (docs/stores.md).
    return new RedisLedgerStorage({
      url: spec.url as string,
      prefix: spec.prefix as string,
      dispatchLookup: "scan",
    })
  if (spec.kind === "postgres") {
    const pool = new pg.Pool({ connectionString: spec.dsn, max: 2 })
    return Object.assign(new NeonLedgerStorage({ pool, table: spec.table as string }), {
      close: () => pool.end(),
    })
  }
  // Python workers write the file while this one runs (the race checks): hold the original's flock too.
  return new FileLedgerStorage(spec.path as string, { pythonLock: true })
}

/** This package's task store on a store `taskSpec` names, and how to let go of its connection. */
export function taskStoreOf(spec: Record<string, string>): { store: TaskStore; close(): Promise<void> } {
  if (spec.kind === "redis") {
    const conn = new RespConnection(spec.url as string)
    const store = new UpstashTaskStore({ redis: upstashShape(conn), prefix: spec.prefix as string })
    return { store, close: async () => conn.close() }
  }
  if (spec.kind === "postgres") {
    const pool = new pg.Pool({ connectionString: spec.dsn, max: 2 })
    return { store: new NeonTaskStore({ pool, table: spec.table as string }), close: () => pool.end() }
  }
  return { store: new FileTaskStore(spec.path as string, { pythonLock: true }), close: async () => {} }
}

const indent = (lines: string[]) => lines.map((l) => `  ${l}`).join("\n")

export function fileStore(dir: string, name: string): SharedStore {
  const paths = { ledger: join(dir, `${name}-ledger.json`), tasks: join(dir, `${name}-tasks.json`) }
  return {
    kind: "file",
    spec: { kind: "file", path: paths.ledger },
    taskSpec: { kind: "file", path: paths.tasks },
    yaml: {
      ledger: indent(["storage: file", `path: ${paths.ledger}`, "python_lock: true"]),
      tasks: indent(["storage: file", `path: ${paths.tasks}`, "python_lock: true"]),
    },
    keys: async (of) =>
      existsSync(paths[of]) ? Object.keys(JSON.parse(readFileSync(paths[of], "utf8")) as object) : [],
    close: async () => {},
  }
}

export function redisStore(url: string, run: string): SharedStore {
  const prefix = { ledger: `interop-${run}:action:`, tasks: `interop-${run}:task:` }
  const conn = new RespConnection(url)
  return {
    kind: "redis",
    spec: { kind: "redis", url, prefix: prefix.ledger },
    taskSpec: { kind: "redis", url, prefix: prefix.tasks },
    yaml: {
      ledger: indent([
        "storage: redis",
        `url: ${url}`,
        `prefix: "${prefix.ledger}"`,
        "dispatch_lookup: scan",
      ]),
      tasks: indent(["storage: redis", `url: ${url}`, `prefix: "${prefix.tasks}"`]),
    },
    keys: async (of) => {
      const keys = (await conn.command("KEYS", `${prefix[of]}*`)) as string[]
      return keys.map((k) => k.slice(prefix[of].length))
    },
    close: async () => {
      // Tombstones live beside the prefix (`interop-<run>:action-tomb:`), so one pattern takes the run's keys.
      const keys = (await conn.command("KEYS", `interop-${run}:*`)) as string[]
      if (keys.length) await conn.command("DEL", ...keys)
      conn.close()
    },
  }
}

/** The original's ledger and task tables, named for this run. */
export function postgresStore(dsn: string, run: string): SharedStore {
  const table = { ledger: `interop_${run}_action`, tasks: `interop_${run}_task` }
  const pool = new pg.Pool({ connectionString: dsn, max: 2 })
  return {
    kind: "postgres",
    spec: { kind: "postgres", dsn, table: table.ledger },
    taskSpec: { kind: "postgres", dsn, table: table.tasks },
    yaml: {
      ledger: indent(["storage: postgres", `dsn: ${dsn}`, `table: ${table.ledger}`]),
      tasks: indent(["storage: postgres", `dsn: ${dsn}`, `table: ${table.tasks}`]),
    },
    keys: async (of) =>
      (await pool.query<{ request_id: string }>(`SELECT request_id FROM ${table[of]}`)).rows.map(
        (r) => r.request_id,
      ),
    prepare: (src) => createTables(src, dsn, table.ledger, table.tasks),
    close: async () => {
      await pool.query(`DROP TABLE IF EXISTS ${table.ledger}, ${table.tasks}`)
      await pool.query(`DROP FUNCTION IF EXISTS ${table.ledger}_claim`).catch(() => {})
      await pool.end()
    },
  }
}

/**
 * The original creates its tables on first use (`CREATE TABLE IF NOT EXISTS`); this package's migrate() adds its
 * claim function and index to them. Here the original goes first, as in a Python deployment that adds TypeScript
 * workers: it creates both tables, then this package's migrations run over them, as its docs say.
 */
async function createTables(src: string, dsn: string, table: string, tasks: string): Promise<string | null> {
  const py = spawnSync(
    "python3",
    [
      "-c",
      "import sys\nfrom mycelium import PostgresLedgerStorage, PostgresTaskLedgerStorage\n" +
        "PostgresLedgerStorage(sys.argv[1], table=sys.argv[2]).get('none')\n" +
        "PostgresTaskLedgerStorage(sys.argv[1], table=sys.argv[3]).get('none')\n",
      dsn,
      table,
      tasks,
    ],
    { encoding: "utf8", env: pythonEnv(src) },
  )
  if (py.status !== 0)
    return `the original could not create its tables: ${py.stderr.trim().split("\n").at(-1)}`
  const pool = new pg.Pool({ connectionString: dsn, max: 1 })
  try {
    await new NeonLedgerStorage({ pool, table }).migrate()
    await new NeonTaskStore({ pool, table: tasks }).migrate()
  } finally {
    await pool.end()
  }
  return null
}
