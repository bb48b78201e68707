// The Neon family's shared pieces, package-internal (not an entry): the driver shapes the ledger, task and receipt
// stores accept, one query function over either driver, and the table-name rule (names are spliced into SQL).
import { InvalidOptionError, MyceliumError } from "../core/errors.ts"
import { requestTimeoutOption } from "../core/storage/request-timeout.ts"

/** What the adapter needs of a `Pool`, `Client` or `PoolClient` (neon's or node-postgres'). */
export interface NeonQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>
}

/** What the adapter needs of the HTTP function returned by `neon(url)`. */
export interface NeonHttpQuery {
  query(
    text: string,
    params?: unknown[],
    options?: { arrayMode?: false; fullResults?: false },
  ): PromiseLike<unknown>
}

/** What every Neon store takes: a Pool/Client or a neon() function, and its table name. */
export type NeonStoreOptions = (
  | { readonly pool: NeonQueryable; readonly sql?: undefined }
  | { readonly sql: NeonHttpQuery; readonly pool?: undefined }
) & {
  /** Table name; each store has its own default (the original's table names). */
  readonly table?: string
  /**
   * Seconds one statement may take, a wait for a pooled connection included, before it fails with
   * `NeonTimeoutError`: a database that stops answering is an outage, and the ledger fails the call closed. Default
   * 30; null for no limit. The statement may still complete; the driver's own limits (a Pool's
   * `connectionTimeoutMillis`, `query_timeout`) also free its connection.
   */
  readonly timeout?: number | null
}

/** The table name is not `^[a-z][a-z0-9_]*$` or is too long for Postgres (see `tableName`). */
export class InvalidTableNameError extends InvalidOptionError {
  override readonly name = "InvalidTableNameError"
  override readonly code = "invalid_table_name"
}

/** The driver answered in a shape the adapter does not read (e.g. `neon()` configured with `fullResults`). */
export class NeonDriverError extends MyceliumError {
  override readonly name = "NeonDriverError"
  override readonly code = "neon_driver_reply"
}

/** Postgres did not answer one statement within the store's `timeout`. */
export class NeonTimeoutError extends MyceliumError {
  override readonly name = "NeonTimeoutError"
  override readonly code = "neon_timeout"
}

const TABLE_RE = /^[a-z][a-z0-9_]*$/

/**
 * The table name to use, or `InvalidTableNameError` when it is not `^[a-z][a-z0-9_]*$` or longer than `max`: Postgres
 * silently cuts identifiers to 63 bytes, so two longer names (or the names a store derives by appending a suffix)
 * would be one table or function. Names are quoted in SQL, so reserved words (`order`, `user`) work.
 */
export function tableName(table: string | undefined, fallback: string, max = 63): string {
  const name = table ?? fallback
  if (!TABLE_RE.test(name) || name.length > max)
    throw new InvalidTableNameError(
      `table name '${name}' must match ^[a-z][a-z0-9_]*$ and be at most ${max} characters (Postgres cuts longer names)`,
    )
  return name
}

/**
 * `ddl` as one statement (so it also runs over the HTTP driver) that first takes a transaction-scoped advisory lock
 * on the table: two first-time `IF NOT EXISTS` creations otherwise race on the catalog ("type … already exists").
 */
export const migration = (table: string, ddl: string): string =>
  `DO $mycelium_migrate$ BEGIN PERFORM pg_advisory_xact_lock(hashtext('mycelium-migrate:${table}')); ${ddl} END $mycelium_migrate$`

/** One query: SQL text and parameters in, rows as objects out. */
export type Run = (text: string, params: unknown[]) => Promise<Record<string, unknown>[]>

export function driverRun(options: NeonStoreOptions): Run {
  return retried(bounded(unbounded(options), requestTimeoutOption(options.timeout, "timeout")))
}

/**
 * `run`, run again (at most 20 times) when Postgres aborts a statement as a serialization failure (SQLSTATE 40001):
 * under REPEATABLE READ or SERIALIZABLE (a session or role default) a race lost to a concurrent write (two inserts of
 * one id, two updates of one row), which READ COMMITTED waits out and re-reads. It was reported as an outage. Every
 * statement here is a transaction of its own, so nothing was written, and run again it sees the winner's write.
 */
function retried(run: Run): Run {
  return async (text, params) => {
    for (let round = 1; ; round++)
      try {
        return await run(text, params)
      } catch (e) {
        if ((e as { code?: unknown } | null)?.code !== "40001" || round >= 20) throw e
      }
  }
}

function unbounded(options: NeonStoreOptions): Run {
  if (options.pool) {
    const pool = options.pool
    return async (text, params) => (await pool.query(text, params)).rows as Record<string, unknown>[]
  }
  if (options.sql) {
    const sql = options.sql
    return async (text, params) => {
      const rows = await sql.query(text, params, { arrayMode: false, fullResults: false })
      if (!Array.isArray(rows))
        throw new NeonDriverError("neon() query did not return rows: create it without fullResults/arrayMode")
      return rows as Record<string, unknown>[]
    }
  }
  throw new InvalidOptionError(
    "a Neon store needs { pool } or { sql }: pass a Pool or a neon() query function",
  )
}

/** `run`, failing each statement that has not answered within `seconds`. */
function bounded(run: Run, seconds: number | null): Run {
  if (seconds === null) return run
  const ms = Math.max(1, Math.ceil(seconds * 1000))
  return (text, params) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new NeonTimeoutError(
              `Postgres did not answer within ${seconds} s (timeout): treated as an outage, though the statement ` +
                "may still complete. Check the database, or raise the store's timeout for slow statements.",
            ),
          ),
        ms,
      )
      run(text, params).then(
        (rows) => {
          clearTimeout(timer)
          resolve(rows)
        },
        (e: unknown) => {
          clearTimeout(timer)
          reject(e)
        },
      )
    })
}

/** The table, a column or the claim function is missing: `migrate()` has not run (or ran with an older version). */
export class NeonSchemaMissingError extends MyceliumError {
  override readonly name = "NeonSchemaMissingError"
  override readonly code = "neon_schema_missing"
}

// undefined_table, undefined_column (the original's table before migrate() added ours), undefined_function
const SCHEMA_MISSING_CODES = new Set(["42P01", "42703", "42883"])

/** Postgres' "no such table/column/function" becomes an error that says what to do (the task store's too). */
export function withSchemaHint(run: Run, table: string, what = "ledger table"): Run {
  return async (text, params) => {
    try {
      return await run(text, params)
    } catch (err) {
      const code = (err as { code?: unknown } | null)?.code
      if (typeof code !== "string" || !SCHEMA_MISSING_CODES.has(code)) throw err
      throw new NeonSchemaMissingError(
        `${what} '${table}' or a column or function of it is missing: run \`await storage.migrate()\` once ` +
          `(after upgrading mycelium-runtime too); Postgres said: ${(err as Error).message}`,
        { cause: err },
      )
    }
  }
}
