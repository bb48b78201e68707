// mycelium.yaml from disk, for Node, Deno and Bun: environment from the process, stores built from the file's
// storage choices. Client libraries load only when a store needs them, so a file-only config installs nothing else.
import { readFile, stat } from "node:fs/promises"
// Node, Deno and Bun all have AsyncLocalStorage: without it config.run() could not key the calls inside it by the
// run as the original does, and a Python worker sharing the ledger would key the same call differently.
import "../async-context.ts"
import type { NeonQueryable } from "../adapters/neon-kit.ts"
import {
  ConfigError,
  type LoadConfigOptions,
  loadConfigFromString,
  type MyceliumConfig,
  type ResolvedStorage,
} from "../core/config/index.ts"
import type { ReceiptStoreChoice, StateStoreChoice } from "../core/config/mycelium-config.ts"
import { storageTimeout } from "../core/config/normalize.ts"
import { choiceError, decodeConfig, refuseSize } from "../core/config/source.ts"
import type { LedgerStorage } from "../core/ledger/index.ts"
import { MemoryReceiptStore, type ReceiptStore } from "../core/receipts/store.ts"
import { MemoryStateFlushStore, type StateFlushStore } from "../core/state/index.ts"
import { MemoryTaskStore, type TaskStore } from "../core/tasks/store.ts"
import { realpathResolver } from "./paths.ts"
import { poolCloser } from "./pool-close.ts"

/** Options for {@link loadConfig}: as `loadConfigFromString`, with `env` defaulting to `process.env`. */
export type LoadConfigFileOptions = LoadConfigOptions

// Errors name the file, key and line the choice was read from (choiceError): the factory sees only the choice.
async function optional<T>(pkg: string, load: () => Promise<T>, choice: ResolvedStorage): Promise<T> {
  try {
    return await load()
  } catch (e) {
    const code = (e as { code?: string }).code
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND")
      throw choiceError(choice, `storage '${choice.kind}' needs the package '${pkg}': npm install ${pkg}`)
    throw e
  }
}

/** The storage's `timeout` (or its kind's default) in milliseconds, or undefined for no limit. */
function limitMs(choice: ResolvedStorage): number | undefined {
  const seconds = storageTimeout(choice)
  return typeof seconds === "number" ? Math.max(1, Math.ceil(seconds * 1000)) : undefined
}

/**
 * An Upstash client whose every command (its own retries and the answer's body included) ends by `timeout`. The
 * signal is a function: the client throws when such a signal aborts, where a plain signal gets a fake answer.
 */
async function upstashClient(choice: ResolvedStorage): Promise<import("@upstash/redis").Redis> {
  const { Redis } = await optional("@upstash/redis", () => import("@upstash/redis"), choice)
  const ms = limitMs(choice)
  return new Redis({
    url: choice.url as string,
    token: choice.token as string,
    ...(ms !== undefined && { signal: () => AbortSignal.timeout(ms) }),
  })
}

/** node-postgres / Neon pool options for `timeout`: the connect and each query, cut off client-side. */
function poolLimits(choice: ResolvedStorage): { connectionTimeoutMillis?: number; query_timeout?: number } {
  const ms = limitMs(choice)
  return ms === undefined ? {} : { connectionTimeoutMillis: ms, query_timeout: ms }
}

/**
 * The pool a `postgres` (node-postgres) or `neon` (serverless driver) store runs on, and the close() the config calls:
 * its idle sockets would keep a short-lived process (the CLI) alive, and a dead server's must not hold it either.
 */
async function sqlPool(
  choice: ResolvedStorage,
): Promise<{ pool: NeonQueryable; close: () => Promise<void> }> {
  const options = { connectionString: choice.dsn as string, ...poolLimits(choice) }
  let pool: import("pg").Pool | import("@neondatabase/serverless").Pool
  if (choice.kind === "neon") {
    const neon = await optional("@neondatabase/serverless", () => import("@neondatabase/serverless"), choice)
    pool = new neon.Pool(options)
  } else {
    const pg = await optional("pg", () => import("pg"), choice)
    const Pool = (pg as { default?: { Pool: typeof import("pg").Pool } }).default?.Pool ?? pg.Pool
    pool = new Pool({ ...options, max: 4 })
  }
  return { pool, close: poolCloser(pool, limitMs(choice)) }
}

/** `in_flight_ttl: null` is the original's "no TTL", which the Redis stores spell 0 (absent keeps their 7 days). */
const inFlightTtl = (ttl: number | null): number => ttl ?? 0
/** A file store's `python_lock`, as its constructor options. */
const pythonLockOf = (choice: { pythonLock?: boolean }) =>
  choice.pythonLock !== undefined ? { pythonLock: choice.pythonLock } : {}

/** Builds the stores a Node, Deno or Bun process can reach. */
export async function nodeStorageFactory(choice: ResolvedStorage): Promise<LedgerStorage> {
  switch (choice.kind) {
    case "memory": {
      const { MemoryLedgerStorage } = await import("../core/ledger/index.ts")
      return new MemoryLedgerStorage()
    }
    case "file": {
      const { FileLedgerStorage } = await import("../adapters/file.ts")
      return new FileLedgerStorage(choice.path as string, pythonLockOf(choice))
    }
    case "upstash": {
      const redis = await upstashClient(choice)
      const { UpstashLedgerStorage } = await import("../adapters/upstash.ts")
      return new UpstashLedgerStorage({
        redis,
        ...(choice.prefix !== undefined && { prefix: choice.prefix }),
        ...(choice.inFlightTtl !== undefined && { inFlightTtl: inFlightTtl(choice.inFlightTtl) }),
        ...(choice.dispatchLookup !== undefined && { dispatchLookup: choice.dispatchLookup }),
      })
    }
    case "redis": {
      const { RedisLedgerStorage } = await import("../adapters/redis.ts")
      const ms = limitMs(choice)
      return new RedisLedgerStorage({
        url: choice.url as string,
        ...(ms !== undefined && { timeoutMs: ms }),
        ...(choice.prefix !== undefined && { prefix: choice.prefix }),
        ...(choice.inFlightTtl !== undefined && { inFlightTtl: inFlightTtl(choice.inFlightTtl) }),
        ...(choice.dispatchLookup !== undefined && { dispatchLookup: choice.dispatchLookup }),
      })
    }
    case "postgres":
    case "neon": {
      const { NeonLedgerStorage } = await import("../adapters/neon.ts")
      const { pool, close } = await sqlPool(choice)
      const storage = new NeonLedgerStorage({
        pool,
        ...(choice.table !== undefined && { table: choice.table }),
        timeout: storageTimeout(choice) ?? null,
      })
      return Object.assign(storage, { close })
    }
    default:
      throw choiceError(
        choice,
        `storage '${choice.kind}' is not reachable from a Node, Deno or Bun process (it lives in a browser or a Worker)`,
      )
  }
}

/** A task store that holds connections has `close()` (the CLI calls it before exiting). */
export type ClosableTaskStore = TaskStore & { close?(): Promise<void> }

/**
 * Builds the task stores a Node, Deno or Bun process can reach: the same storage kinds as the action ledger, in the
 * original's task layouts (`mycelium:task:` keys, table `mycelium_task_ledger`).
 */
export async function nodeTaskStoreFactory(choice: ResolvedStorage): Promise<ClosableTaskStore> {
  const prefix = choice.prefix !== undefined ? { prefix: choice.prefix } : {}
  const table = choice.table !== undefined ? { table: choice.table } : {}
  const timeout = { timeout: storageTimeout(choice) ?? null }
  switch (choice.kind) {
    case "memory":
      return new MemoryTaskStore()
    case "file": {
      const { FileTaskStore } = await import("../adapters/file-tasks.ts")
      return new FileTaskStore(choice.path as string, pythonLockOf(choice))
    }
    case "upstash": {
      const redis = await upstashClient(choice)
      const { UpstashTaskStore } = await import("../adapters/upstash-tasks.ts")
      return new UpstashTaskStore({
        redis,
        ...prefix,
      })
    }
    case "redis": {
      // The task store's Lua scripts over the RESP connection the Redis ledger uses: one implementation for both.
      const { RespConnection, upstashShape } = await import("../adapters/redis.ts")
      const { UpstashTaskStore } = await import("../adapters/upstash-tasks.ts")
      const connection = new RespConnection(choice.url as string, limitMs(choice))
      const store = new UpstashTaskStore({ redis: upstashShape(connection), ...prefix })
      return Object.assign(store, { close: async () => connection.close() })
    }
    case "postgres":
    case "neon": {
      const { NeonTaskStore } = await import("../adapters/neon-tasks.ts")
      const { pool, close } = await sqlPool(choice)
      return Object.assign(new NeonTaskStore({ pool, ...table, ...timeout }), { close })
    }
    default:
      throw choiceError(
        choice,
        `task_ledger storage '${choice.kind}' is not reachable from a Node, Deno or Bun process (it lives in a ` +
          `browser or a Worker: pass { taskStoreFactory } there, e.g. IndexedDbTaskStore or DurableObjectTaskStore)`,
      )
  }
}

/** The `audit_receipt:` stores a Node, Deno or Bun process can keep: memory and the original's JSONL file. */
export async function nodeReceiptStoreFactory(choice: ReceiptStoreChoice): Promise<ReceiptStore> {
  if (choice.kind === "memory") return new MemoryReceiptStore()
  if (choice.kind === "file") {
    const { FileReceiptStore } = await import("../adapters/file-receipts.ts")
    return new FileReceiptStore(choice.path as string, pythonLockOf(choice))
  }
  throw choiceError(
    choice,
    `audit_receipt storage '${choice.kind}' lives in a browser, not in this process (pass { receiptStoreFactory })`,
  )
}

/** The `state_flush:` stores a Node, Deno or Bun process can keep: memory and the original's JSON file. */
export async function nodeStateStoreFactory(choice: StateStoreChoice): Promise<StateFlushStore> {
  if (choice.kind === "memory") return new MemoryStateFlushStore()
  if (choice.kind === "file") {
    const { FileStateFlushStore } = await import("../adapters/file-state.ts")
    return new FileStateFlushStore(choice.path as string, pythonLockOf(choice))
  }
  throw choiceError(
    choice,
    `state_flush storage '${choice.kind}' lives in a browser or a Worker, not in this process`,
  )
}

const processEnv = (): Record<string, string | undefined> =>
  (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env ?? {}

/**
 * Reads `mycelium.yaml` (or another path) into a `MyceliumConfig`. Unknown keys, wrong types, unset environment
 * variables and unimplemented sections are `ConfigError`s naming the key path, line and column.
 */
export async function loadConfig(
  path = "mycelium.yaml",
  options: LoadConfigFileOptions = {},
): Promise<MyceliumConfig> {
  let text: string
  try {
    // A directory, /dev/zero or a FIFO: named as the config's problem, never read forever.
    const file = await stat(path)
    if (!file.isFile())
      throw new ConfigError(
        "not a regular file (a directory or a device): pass the YAML file",
        { path: [] },
        path,
      )
    refuseSize(file.size, path)
    text = decodeConfig(await readFile(path), path)
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT")
      throw new ConfigError(
        `config file not found: ${path} (create one with: npx mycelium init)`,
        { path: [] },
        path,
      )
    if (e instanceof ConfigError) throw e
    // ENOTDIR, ELOOP, EACCES...: still the config's problem, with the path and the reason.
    throw new ConfigError(
      `cannot read the config file: ${e instanceof Error ? e.message : String(e)} (check the path and its permissions)`,
      { path: [] },
      path,
    )
  }
  // Each default per field: an option passed as undefined (a wrapper forwarding its own) must not drop it.
  return loadConfigFromString(text, {
    ...options,
    source: options.source ?? path,
    env: options.env ?? processEnv(),
    storageFactory: options.storageFactory ?? nodeStorageFactory,
    stateStoreFactory: options.stateStoreFactory ?? nodeStateStoreFactory,
    taskStoreFactory: options.taskStoreFactory ?? nodeTaskStoreFactory,
    receiptStoreFactory: options.receiptStoreFactory ?? nodeReceiptStoreFactory,
    // The original resolves `allowed_paths` and the called path with Path.resolve(): relative to the working
    // directory, through symlinks. Without this a symlink inside a root reached the tool here, refused there.
    // Per field: `paths: { baseDir }` alone must not drop the resolver.
    paths: {
      baseDir: options.paths?.baseDir ?? process.cwd(),
      pathResolver: options.paths?.pathResolver ?? realpathResolver,
    },
  })
}
