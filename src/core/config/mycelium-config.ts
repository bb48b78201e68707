import { type AsyncLocalStorageLike, asyncContextClass } from "../context/async-context.ts"
import { protect } from "../context/protect.ts"
import { Session } from "../context/session.ts"
import type { JsonValue, ToolArgs } from "../ledger/index.ts"
import {
  ActionLedger,
  type CallMeta,
  type LedgerStorage,
  MemoryLedgerStorage,
  type TransitionContext,
} from "../ledger/index.ts"
import { toStoredAndKeyed } from "../ledger/model/canonical.ts"
import { scopeArg } from "../ledger/model/identity.ts"
import { ReceiptEmitter } from "../receipts/emitter.ts"
import { hmacReceiptSigner } from "../receipts/signer.ts"
import { MemoryReceiptStore, type ReceiptStore } from "../receipts/store.ts"
import {
  MemoryStateFlushStore,
  StateFlush,
  type StateFlushRun,
  type StateFlushStore,
} from "../state/index.ts"
import { deriveTaskRequestId } from "../tasks/identity.ts"
import { MemoryTaskStore, type TaskStore } from "../tasks/store.ts"
import { type TaskCallMeta, type TaskContext, TaskLedger } from "../tasks/task-ledger.ts"
import { bounded, type PathResolver } from "../tools/bounded.ts"
import { SchemaBuildError } from "../tools/errors.ts"
import { compileFieldSpec, type FieldSpecSchema } from "../tools/field-spec.ts"
import { ToolRegistry } from "../tools/registry.ts"
import { ToolRunner } from "../tools/runner.ts"
import { HistoryGuard } from "../transcript/history-guard.ts"
import { MessageValidator } from "../transcript/message-validator.ts"
import { ConfigClosedError, ConfigError } from "./errors.ts"
import type {
  ResolvedConfig,
  ResolvedStorage,
  ResolvedTask,
  ResolvedTool,
  ResolvedTransition,
} from "./normalize.ts"
import { type ConfigSource, choiceError, placeChoice } from "./source.ts"

/** Builds the store a storage choice names. Node, Deno and Bun get one from `loadConfig`; Workers pass their own. */
export type StorageFactory = (storage: ResolvedStorage) => LedgerStorage | Promise<LedgerStorage>

/** Builds the task store a `task_ledger:` / `tasks.<name>.ledger` storage choice names (Node: `loadConfig` passes one). */
export type TaskStoreFactory = (storage: ResolvedStorage) => TaskStore | Promise<TaskStore>

/** The `audit_receipt:` storage choice. */
export interface ReceiptStoreChoice {
  readonly kind: "memory" | "file" | "indexeddb"
  readonly path?: string
  readonly database?: string
  /** `python_lock` (file): also hold the original's flock on `<path>.lock`. */
  readonly pythonLock?: boolean
}

/** Builds the `audit_receipt:` store for `file` and `indexeddb` (Node: `loadConfig` passes one for `file`). */
export type ReceiptStoreFactory = (choice: ReceiptStoreChoice) => ReceiptStore | Promise<ReceiptStore>

/** Options for `MyceliumConfig` (through `loadConfigFromString` / `loadConfig`). */
export interface MyceliumConfigOptions {
  /** Builds non-memory stores. Without one, only `storage: memory` works. */
  storageFactory?: StorageFactory
  /** Builds non-memory task stores (`task_ledger:`). Without one, only `storage: memory` works. */
  taskStoreFactory?: TaskStoreFactory
  /** Builds the `audit_receipt:` store for `file` and `indexeddb`. Without one, only `storage: memory` works. */
  receiptStoreFactory?: ReceiptStoreFactory
  /** Time in epoch seconds for every ledger the config builds (tests pass a `ManualClock`). */
  clock?: { now(): number }
  /** Where one-time warnings go. Default `console.warn`. */
  onWarning?: (message: string) => void
  /** Builds the `state_flush:` store for `file`, `indexeddb` and `durable_object` (Node: `loadConfig` passes one). */
  stateStoreFactory?: StateStoreFactory
  /**
   * For `bounded.allowed_paths`: the directory relative paths resolve against, and a symlink resolver (Node:
   * `loadConfig` passes the working directory and `realpath`, as the original resolves both).
   */
  paths?: ConfigPaths
}

/** Builds the `state_flush:` store for `file`, `indexeddb` and `durable_object`. */
export type StateStoreFactory = (choice: StateStoreChoice) => StateFlushStore | Promise<StateFlushStore>

/** Where `bounded.allowed_paths` resolve: a base directory and a symlink resolver. */
export interface ConfigPaths {
  baseDir?: string
  pathResolver?: PathResolver
}

/** The `state_flush:` storage choice. */
export interface StateStoreChoice {
  readonly kind: "memory" | "file" | "indexeddb" | "durable_object"
  readonly path?: string
  readonly database?: string
  readonly binding?: string
  /** `python_lock` (file): also hold the original's flock on `<path>.lock`. */
  readonly pythonLock?: boolean
}

/** What `config.run()` hands its body: the run's id, its Session, and the flushed state (no-ops without a section). */
export interface ConfigRun {
  readonly runId: string
  readonly session: Session
  /** Shallow-merges into the run's state; flushed on cancel, disconnect, error and completion (`state_flush:`). */
  record(patch: Readonly<Record<string, unknown>>): void
  /** The run's state so far (empty without `state_flush:`). */
  readonly state: Readonly<Record<string, unknown>>
  /** Aborts when the run is cancelled or its client disconnects. */
  readonly signal: AbortSignal
}

/** Options for `config.run()`. */
export interface ConfigRunOptions {
  /** Cancels the run: with `state_flush:`, its state is flushed as aborted/cancel at once. */
  readonly signal?: AbortSignal
  /** The client went away (e.g. an HTTP request's signal): flushed as aborted/disconnect. */
  readonly disconnectSignal?: AbortSignal
  /** Start from this state (e.g. `await config.resume(runId)`). */
  readonly initial?: Readonly<Record<string, unknown>>
}

/** A tool body as the config wraps it: the ledger's `TransitionContext` arrives as the second argument. */
export type ConfiguredToolBody<A, R> = (args: A, tx: TransitionContext) => R | Promise<R>

/** A configured tool: call it with its arguments and the call's metadata (`toolCallId`, `runId`, ...). */
export type ConfiguredTool<A, R> = ((args: A, meta?: CallMeta) => Promise<Awaited<R>>) & {
  readonly toolName: string
}

/** A task body as the config wraps it: the task ledger's `TaskContext` arrives as the second argument. */
export type ConfiguredTaskBody<A, R> = (args: A, ctx: TaskContext) => R | Promise<R>

/** A configured task: call it with its arguments and `{ taskId?, runId?, wait?, signal? }` (the request id's sources). */
export type ConfiguredTask<A, R> = ((args: A, meta?: TaskCallMeta) => Promise<Awaited<R>>) & {
  readonly taskName: string
}

// A task body's TaskContext is a subset of TransitionContext, so task bodies fit here too.
type AnyBody = (args: never, tx: TransitionContext) => unknown
/**
 * What `instrument()` accepts per key: the body itself when its arguments are an object; a body taking a number, a
 * list, a `Map`... is a compile error, as `apply()` makes it (a ledgered tool refuses them before the claim).
 */
export type InstrumentableBodies<T> = {
  [K in keyof T]: T[K] extends (args: infer A, ctx: infer C) => infer R
    ? (args: A extends object ? ToolArgs<A> : object, ctx: C) => R
    : T[K]
}
/** What `instrument()` returns per key: a body whose second parameter is a `TaskContext` is typed as a task. */
/** What `instrument()` returns: each body wrapped as its YAML entry (a tool or a task) says. */
export type Instrumented<T extends Record<string, AnyBody>> = {
  [K in keyof T]: T[K] extends (args: infer A, ctx: infer C) => infer R
    ? unknown extends C
      ? ConfiguredTool<A, R>
      : TaskContext extends C
        ? ConfiguredTask<A, R>
        : ConfiguredTool<A, R>
    : never
}

interface RunScope {
  readonly runId: string
  readonly flush: StateFlushRun | null
}
let scopeStore: AsyncLocalStorageLike<RunScope> | undefined
const runScope = (): AsyncLocalStorageLike<RunScope> | undefined => {
  if (!scopeStore) {
    const cls = asyncContextClass()
    scopeStore = cls ? new cls<RunScope>() : undefined
  }
  return scopeStore
}

/**
 * A call's metadata inside `config.run(runId)`. The original enters `TransitionScope(thread_id=run_id, run_id=run_id)`
 * as the ambient scope, which both fields of the transition key hash: a binding's `scope_from` argument and an
 * explicit `threadId` / `runId` override it, so it fills only the fields neither sets. Anything else keys the same
 * call differently from a Python worker.
 */
function inRun(
  meta: CallMeta,
  runId: string,
  scopeFrom: Readonly<Partial<Record<"thread_id" | "run_id" | "node", string>>>,
  args: unknown,
): CallMeta {
  // The run fills only what the argument does not, read as the ledger reads it (null is "None", not absent).
  const fromArgs = (field: "thread_id" | "run_id"): boolean =>
    typeof args === "object" &&
    args !== null &&
    scopeArg(scopeFrom, args as Record<string, unknown>, field) !== undefined
  const threadId = meta.threadId === undefined && !fromArgs("thread_id")
  const run = meta.runId === undefined && !fromArgs("run_id")
  if (!threadId && !run) return meta
  return { ...meta, ...(threadId && { threadId: runId }), ...(run && { runId }) }
}

const compiles = (schema: Record<string, unknown>): boolean => {
  try {
    compileFieldSpec(schema as FieldSpecSchema)
    return true
  } catch {
    return false
  }
}

const isTransitionContext = (v: unknown): v is TransitionContext =>
  typeof v === "object" && v !== null && "sideEffect" in v && "requestId" in v

/**
 * `mycelium.yaml`, loaded: wraps tools with the guards the file names, in the original's order (outermost first):
 * ledger → bounded → protect → the tool.
 */
export class MyceliumConfig {
  readonly profile: "development" | "production"
  readonly transition: ResolvedTransition | null
  readonly tools: ReadonlyMap<string, ResolvedTool>
  /** `tasks:` entries and names listed in `task_ledger.tasks`, resolved. */
  readonly tasks: ReadonlyMap<string, ResolvedTask>
  readonly warnings: readonly string[]
  readonly resolved: ResolvedConfig
  readonly #options: MyceliumConfigOptions
  readonly #source: ConfigSource | undefined
  // One guard per conversation scope: its drop check compares a conversation's calls with each other only.
  readonly #guards = new WeakMap<object, HistoryGuard>()
  readonly #baselined = new WeakSet<HistoryGuard>()
  readonly #stores = new Map<string, Promise<LedgerStorage>>()
  readonly #ledgers = new Map<string, Promise<ActionLedger>>()
  readonly #taskStores = new Map<string, Promise<TaskStore>>()
  readonly #taskLedgers = new Map<string, Promise<TaskLedger>>()
  #receipts: Promise<ReceiptEmitter> | undefined
  #stateFlush: Promise<StateFlush | null> | undefined
  /** Every store this config opened (pending or built), for `close()`. */
  readonly #opened: Promise<unknown>[] = []
  #warnedNoScope = false
  #closing: Promise<void> | undefined

  /** `source` (what `loadConfigFromString` parsed) places errors raised after loading at their key's line. */
  constructor(resolved: ResolvedConfig, options: MyceliumConfigOptions = {}, source?: ConfigSource) {
    this.resolved = resolved
    this.profile = resolved.profile
    this.transition = resolved.transition
    this.tools = resolved.tools
    this.tasks = resolved.tasks
    this.warnings = resolved.warnings
    // Warnings are listed, not printed: each ledger warns once on first use, and `mycelium doctor` shows the list.
    this.#options = options
    this.#source = source
  }

  /** The store for a storage choice, one instance per distinct choice (tools on one file share it). */
  storage(choice: ResolvedStorage): Promise<LedgerStorage> {
    const key = JSON.stringify(choice)
    let store = this.#stores.get(key)
    if (!store) {
      const factory = this.#options.storageFactory
      store = this.#open("storage", async () => {
        if (choice.kind === "memory" && !factory) return new MemoryLedgerStorage()
        if (!factory)
          throw choiceError(
            choice,
            `storage '${choice.kind}' needs a store factory: load the file with loadConfig() from ` +
              `'mycelium-runtime/node/config' (Node, Deno, Bun) or pass { storageFactory } to loadConfigFromString()`,
          )
        return await factory(choice)
      })
      this.#stores.set(key, store)
    }
    return store
  }

  /** The ledger a configured tool runs through, or null when the tool is not ledgered. */
  ledgerFor(name: string): Promise<ActionLedger> | null {
    const tool = this.tools.get(name)
    if (!tool?.ledger) return null
    let ledger = this.#ledgers.get(name)
    if (!ledger) {
      const l = tool.ledger
      const t = this.transition
      const receipts = tool.auditReceipt ? this.receipts() : Promise.resolve(null)
      ledger = Promise.all([this.storage(l.storage), receipts]).then(
        ([storage, receipts]) =>
          new ActionLedger({
            storage,
            receipts,
            unclassifiedPolicy: l.unclassifiedPolicy,
            onArgsDrift: l.onArgsDrift,
            requestIdentityPolicy: l.requestIdentityPolicy,
            ...(t && {
              leaseTtl: t.leaseTtl,
              leaseRenewInterval: t.leaseRenewInterval,
              pollInterval: t.pollInterval,
              pollTimeout: t.pollTimeout,
              reclaimRequiresDeathSignal: t.reclaimRequiresDeathSignal,
              presumedDeadAfter: t.presumedDeadAfter,
            }),
            ...(this.#options.clock && { clock: this.#options.clock }),
            ...(this.#options.onWarning && { onWarning: this.#options.onWarning }),
          }),
      )
      this.#ledgers.set(name, ledger)
    }
    return ledger
  }

  /**
   * Wraps `fn` with the guards `tools.<name>` configures. A name the file does not mention comes back unchanged in
   * behaviour (still a `ConfiguredTool`), so `instrument()` can take every tool of an agent.
   */
  apply<A extends object, R>(name: string, fn: ConfiguredToolBody<ToolArgs<A>, R>): ConfiguredTool<A, R> {
    const tool = this.tools.get(name)
    let body = fn as (args: A, tx?: TransitionContext) => unknown
    if (tool?.protect) {
      body = protect(body, {
        name,
        ...(tool.protect.ttl !== undefined && { ttl: tool.protect.ttl }),
        ...(tool.protect.entityParam !== undefined && {
          entityParam: tool.protect.entityParam as keyof A & string,
        }),
      }) as typeof body
    }
    if (tool?.bounded) {
      const b = tool.bounded
      try {
        body = bounded(body, {
          name,
          ...(b.schema && { schema: b.schema as FieldSpecSchema }),
          ...(b.output_schema && { outputSchema: b.output_schema as FieldSpecSchema }),
          ...(b.entity_param && { entityParam: b.entity_param }),
          ...(b.entity_pattern && { entityPattern: b.entity_pattern }),
          ...(b.allowed_paths && { allowedPaths: b.allowed_paths, ...this.#options.paths }),
          ...(b.path_param && { pathParam: b.path_param }),
        }) as typeof body
      } catch (e) {
        if (!(e instanceof SchemaBuildError)) throw e
        // The file's mistake, at its key: which schema (the input one if it fails alone) and which field in it. The
        // schemas are built first, so a field named like an option (`entity_parent`) is not taken for one.
        const key =
          b.schema && !compiles(b.schema)
            ? "schema"
            : b.output_schema && !compiles(b.output_schema)
              ? "output_schema"
              : (/^(?:entity_pa\w+|allowed_paths|path_param)/.exec(e.message)?.[0] ?? "output_schema")
        const spec = b[key as keyof typeof b]
        const field = /^[^.:[]+/.exec(e.message)?.[0] as string
        const at = spec && typeof spec === "object" && Object.hasOwn(spec, field) ? [field] : []
        throw this.#error(e.message, ["tools", name, "bounded", key, ...at])
      }
    }
    if (tool?.auditReceipt && tool.ledger) {
      const problem = this.#receiptProblem()
      if (problem) throw problem
    }
    const ledger = this.ledgerFor(name)
    let call: (args: A, meta: CallMeta) => Promise<unknown>
    if (ledger) {
      const wrapped = ledger.then((l) =>
        l.tool<Record<string, unknown>, unknown>(
          { name, ...(tool?.binding && { binding: tool.binding }) },
          (args, tx) => body(args as A, tx),
        ),
      )
      // Awaited, not returned: a call refused before its first await is a promise already rejected, and workerd
      // reports one that gains its handler a microtask later (returned from an async function) as unhandled.
      call = async (args, meta) => await (await wrapped)(args as Record<string, unknown>, meta)
    } else {
      call = async (args) => await body(args, undefined)
    }
    const scopeFrom = tool?.binding?.scopeFrom ?? {}
    const configured = async (args: A, meta: CallMeta = {}) => {
      if (isTransitionContext(meta)) meta = {}
      const scope = runScope()?.getStore()
      return await call(args, scope ? inRun(meta, scope.runId, scopeFrom, args) : meta)
    }
    Object.defineProperty(configured, "toolName", { value: name })
    return configured as ConfiguredTool<A, R>
  }

  /**
   * Wraps every function of `fns` by its key: names under `tasks:` (or listed in `task_ledger.tasks`) with
   * `applyTask`, every other name with `apply`. A name configured as both a tool and a task is a `ConfigError`.
   */
  instrument<T extends Record<string, AnyBody> & InstrumentableBodies<T>>(fns: T): Instrumented<T> {
    const out: Record<string, unknown> = {}
    for (const [name, fn] of Object.entries(fns)) {
      if (this.tasks.has(name) && this.tools.has(name))
        throw this.#error(
          `'${name}' is configured under both 'tools.${name}' and 'tasks.${name}': a function is wrapped either as ` +
            `a tool (action ledger) or as a task (task ledger); remove one of the two entries`,
          ["tasks", name],
        )
      out[name] = this.tasks.has(name)
        ? this.applyTask(name, fn as unknown as ConfiguredTaskBody<Record<string, unknown>, unknown>)
        : this.apply(name, fn as ConfiguredToolBody<object, unknown>)
    }
    return out as Instrumented<T>
  }

  /** How the file configures task `name`: its `tasks:` entry, or the `task_ledger:` storage under `tasks: all`. */
  taskConfig(name: string): ResolvedTask | null {
    const task = this.tasks.get(name)
    if (task) return task
    const r = this.resolved
    if (r.raw.task_ledger?.tasks !== "all" || !r.taskLedger) return null
    return { name, ledger: r.taskLedger, idFrom: [], auditReceipt: r.raw.audit_receipt?.auto ?? false }
  }

  /** The task store for a storage choice, one instance per distinct choice (tasks on one file share it). */
  taskStore(choice: ResolvedStorage): Promise<TaskStore> {
    const key = JSON.stringify(choice)
    let store = this.#taskStores.get(key)
    if (!store) {
      const factory = this.#options.taskStoreFactory
      store = this.#open("task store", async () => {
        if (choice.kind === "memory" && !factory) return new MemoryTaskStore()
        if (!factory)
          throw this.#error(
            `task_ledger storage '${choice.kind}' needs a task store factory: load the file with loadConfig() from ` +
              `'mycelium-runtime/node/config' (Node, Deno, Bun) or pass { taskStoreFactory } to loadConfigFromString()`,
            ["task_ledger", "storage"],
          )
        return await factory(choice)
      })
      this.#taskStores.set(key, store)
    }
    return store
  }

  /**
   * The signed-receipt emitter the `audit_receipt:` section configures (HMAC with its key, signed as
   * `transition.agent_id`, as the original), one per config; rejects with a `ConfigError` without that section.
   */
  receipts(): Promise<ReceiptEmitter> {
    this.#receipts ??= this.#open(
      "receipt store",
      async () => {
        const ar = this.resolved.raw.audit_receipt
        if (!ar) throw new ConfigError("no 'audit_receipt:' section: add one to sign receipts")
        const problem = this.#receiptProblem()
        if (problem) throw problem
        const choice: ReceiptStoreChoice = placeChoice(
          {
            kind: ar.storage,
            ...(ar.path !== undefined && { path: ar.path }),
            ...(ar.database !== undefined && { database: ar.database }),
            ...(ar.python_lock !== undefined && { pythonLock: ar.python_lock }),
          },
          this.#source,
          ["audit_receipt"],
        )
        const factory = this.#options.receiptStoreFactory
        let store: ReceiptStore
        if (choice.kind === "memory" && !factory) store = new MemoryReceiptStore()
        else if (!factory)
          throw this.#error(
            `audit_receipt storage '${choice.kind}' needs a receipt store factory: load the file with loadConfig() ` +
              `from 'mycelium-runtime/node/config', or pass { receiptStoreFactory }`,
            ["audit_receipt", "storage"],
          )
        else store = await factory(choice)
        return new ReceiptEmitter({
          signer: hmacReceiptSigner(this.resolved.signingKey as string),
          store,
          agentId: (this.transition as ResolvedTransition).agentId,
          ...(this.#options.clock && { now: () => (this.#options.clock as { now(): number }).now() }),
        })
      },
      (emitter) => emitter.store,
    )
    return this.#receipts
  }

  /** A ConfigError naming the file the config was loaded from, and the key's line and column there. */
  #error(detail: string, path: (string | number)[]): ConfigError {
    const source = (this.#options as { source?: string }).source
    return this.#source?.error(detail, path, true) ?? new ConfigError(detail, { path }, source)
  }

  /** Why receipts cannot be signed (no key, no agent id), or null. */
  #receiptProblem(): ConfigError | null {
    if (this.resolved.signingKey === null)
      return this.#error(
        "audit_receipt needs 'signing_key_env' (or 'signing_key'): receipts are signed with that key",
        ["audit_receipt", "signing_key_env"],
      )
    if (!this.transition)
      return this.#error(
        "audit_receipt needs 'transition.agent_id': receipts are signed as that agent (the original's rule)",
        ["transition", "agent_id"],
      )
    return null
  }

  /** The task ledger task `name` runs through (with receipts when it has `audit_receipt`), or null. */
  taskLedgerFor(name: string): Promise<TaskLedger> | null {
    const task = this.taskConfig(name)
    if (!task?.ledger) return null
    let ledger = this.#taskLedgers.get(name)
    if (!ledger) {
      const storage = task.ledger
      ledger = (async () =>
        new TaskLedger({
          storage: await this.taskStore(storage),
          ...(task.auditReceipt && { receipts: await this.receipts() }),
          ...(this.#options.clock && { clock: this.#options.clock }),
          ...(this.#options.onWarning && { onWarning: this.#options.onWarning }),
        }))()
      this.#taskLedgers.set(name, ledger)
    }
    return ledger
  }

  /**
   * Wraps `fn` as task `name` (the original's `apply_named_task`): a ledgered task runs once per request id
   * (`task_id`, then `run_id`, then the `id_from` fields, then a hash of the arguments) and later calls get its
   * stored result. A name the file does not configure comes back unchanged in behaviour.
   */
  applyTask<A extends object, R>(name: string, fn: ConfiguredTaskBody<ToolArgs<A>, R>): ConfiguredTask<A, R> {
    const task = this.taskConfig(name)
    if (task?.auditReceipt && task.ledger) {
      const problem = this.#receiptProblem()
      if (problem) throw problem
    }
    const ledger = this.taskLedgerFor(name)
    let call: (args: A, meta: TaskCallMeta) => Promise<R>
    if (ledger && task) {
      const idFrom = task.idFrom
      const wrapped = ledger.then((l) => l.task<A, R>({ name, ...(idFrom.length && { idFrom }) }, fn))
      call = async (args, meta) => await (await wrapped)(args, meta) // awaited: see apply()
    } else {
      const never = new AbortController().signal
      call = async (args, meta) => {
        // Unledgered: the body still gets the request id the ledger would use (computed only if read), and no
        // lease to keep.
        let requestId: string | undefined
        const ctx: TaskContext = {
          get requestId() {
            if (requestId === undefined) {
              // The exact values, as the ledger keys them (a bigint is Python's int, not its digits' string).
              const kwargs = toStoredAndKeyed(args ?? {}).keyed as Record<string, JsonValue>
              if (meta.taskId !== undefined) kwargs.task_id = meta.taskId
              if (meta.runId !== undefined) kwargs.run_id = meta.runId
              requestId = deriveTaskRequestId({ task: name, kwargs, idFrom: task?.idFrom ?? null })
            }
            return requestId
          },
          fence: 0,
          signal: meta.signal ?? never,
          renewLease: async () => {},
        }
        return await (fn as ConfiguredTaskBody<A, R>)(args, ctx)
      }
    }
    const configured = async (args: A, meta: TaskCallMeta = {}) => await call(args, meta)
    Object.defineProperty(configured, "taskName", { value: name })
    return configured as ConfiguredTask<A, R>
  }

  /** The `state_flush:` section as a `StateFlush`, or null without one. One instance per config. */
  stateFlush(): Promise<StateFlush | null> {
    this.#stateFlush ??= this.#open(
      "state store",
      async () => {
        const sf = this.resolved.raw.state_flush
        if (!sf) return null
        const choice: StateStoreChoice = placeChoice(
          {
            kind: sf.storage,
            ...(sf.path !== undefined && { path: sf.path }),
            ...(sf.database !== undefined && { database: sf.database }),
            ...(sf.binding !== undefined && { binding: sf.binding }),
            ...(sf.python_lock !== undefined && { pythonLock: sf.python_lock }),
          },
          this.#source,
          ["state_flush"],
        )
        const factory = this.#options.stateStoreFactory
        let storage: StateFlushStore
        if (choice.kind === "memory" && !factory) storage = new MemoryStateFlushStore()
        else if (!factory)
          throw choiceError(
            choice,
            `state_flush storage '${choice.kind}' needs a store factory: load the file with loadConfig() from ` +
              `'mycelium-runtime/node/config', or pass { stateStoreFactory }`,
          )
        else storage = await factory(choice)
        return new StateFlush({ storage, flushOn: sf.flush_on, flushOnComplete: sf.flush_on_complete })
      },
      (flush) => flush?.storage,
    )
    return this.#stateFlush
  }

  /**
   * Closes what the stores this config opened hold open (Redis sockets, Postgres pools), so a script can exit: a
   * Node process with an open connection never does. Stores without connections are left as they are; a tool
   * called afterwards fails closed: with its store's error, or `ConfigClosedError` when its store was never opened.
   * Safe to call more than once.
   */
  close(): Promise<void> {
    // Once closing, no store opens any more (#open): one opened now would hold a socket nobody closes.
    this.#closing ??= (async () => {
      const results = await Promise.allSettled(
        // undefined: a store that failed to open, or no state_flush: section (run() asks for it). Awaited, not
        // returned from then(): a close() that throws before its first await would be reported uncaught by workerd.
        this.#opened.map(
          async (p) => await ((await p) as { close?: () => Promise<void> | void } | undefined)?.close?.(),
        ),
      )
      const failed = results.find((r) => r.status === "rejected")
      if (failed) throw failed.reason
    })()
    return this.#closing
  }

  /**
   * Opens a store through `open`, unless this config is closed, and lists it for close() at once rather than when
   * the factory answers, so a close() in between still closes it. The caller sees a failure through the returned
   * promise; the listed copy must not report it a second time, unhandled.
   */
  #open<T>(what: string, open: () => Promise<T>, storeOf: (opened: T) => unknown = (s) => s): Promise<T> {
    if (this.#closing)
      return Promise.reject(
        new ConfigClosedError(
          `this config was closed (close()), so it opens no ${what}: load the config again`,
        ),
      )
    const opening = open()
    // A store that failed to open holds nothing to close.
    this.#opened.push(opening.then(storeOf, () => undefined))
    return opening
  }

  /** The state a run flushed last (`state_flush:`), to start the next attempt from; null when there is none. */
  async resume(runId: string): Promise<Readonly<Record<string, unknown>> | null> {
    const flush = await this.stateFlush()
    if (!flush || !(await flush.load(runId))) return null
    return await flush.resume(runId)
  }

  /**
   * Runs `fn` as one agent run: configured tools called inside it are scoped by `runId` (where the runtime carries
   * async context), protected tools share one `Session` cache, and with `state_flush:` the run's recorded state is
   * flushed on cancel, disconnect, error and completion (the original's `config.run`).
   */
  async run<R>(
    runId: string,
    fn: (run: ConfigRun) => R | Promise<R>,
    options: ConfigRunOptions = {},
  ): Promise<R> {
    const session = new Session()
    const flush = await this.stateFlush()
    const als = runScope()
    if (!als && !this.#warnedNoScope) {
      // Not an error: the session and the state flush still work. But the calls' keys leave out the run, so the
      // same call is another transition for a Python worker (and for this process inside and outside a run).
      this.#warnedNoScope = true
      ;(this.#options.onWarning ?? console.warn)(
        `config.run('${runId}'): this runtime has no AsyncLocalStorage, so tools called inside are not scoped by ` +
          "the run (the original keys them with thread_id and run_id = the run id). Import " +
          "'mycelium-runtime/async-context' where node:async_hooks exists (Workers: the nodejs_compat flag), or " +
          "pass { threadId, runId } in each call's metadata.",
      )
    }
    const enter = <T>(scope: RunScope, body: () => T): T =>
      als ? als.run(scope, () => session.run(body)) : session.run(body)
    if (!flush) {
      const never = new AbortController()
      const signal = options.signal ?? never.signal
      const state: Record<string, unknown> = { ...options.initial }
      const run: ConfigRun = { runId, session, signal, state, record: (patch) => Object.assign(state, patch) }
      return await enter({ runId, flush: null }, () => fn(run))
    }
    return await flush.run(
      runId,
      (handle) =>
        enter({ runId, flush: handle }, () =>
          fn({
            runId,
            session,
            signal: handle.signal,
            get state() {
              return handle.state
            },
            record: (patch) => handle.record(patch),
          }),
        ),
      {
        ...(options.signal && { signal: options.signal }),
        ...(options.disconnectSignal && { disconnectSignal: options.disconnectSignal }),
        ...(options.initial && { initial: options.initial }),
      },
    )
  }

  /**
   * The allowlist `registry:` configures: `allowed`, else every configured tool, unless `auto: false` says not to
   * (then none, as the original). `allowed: []` allows none unless `auto: true` (every configured tool).
   */
  registry(): ToolRegistry {
    const r = this.resolved.raw.registry
    // The original's registry is empty, refusing every tool, with `allowed: []` (unless `auto: true` fills it) and
    // with an explicit `auto: false` without `allowed`.
    const allowed = r?.allowed?.length
      ? r.allowed
      : (r?.allowed ? r.auto !== true : r?.auto === false)
        ? []
        : [...this.tools.keys()]
    return new ToolRegistry({ allowed })
  }

  /** A ToolRunner with the `runner:` retry counts and the configured registry. */
  runner(): ToolRunner {
    const r = this.resolved.raw.runner
    return new ToolRunner({
      registry: this.registry(),
      ...(r?.max_llm_retries !== undefined && { maxLlmRetries: r.max_llm_retries }),
      ...(r?.max_tool_retries !== undefined && { maxToolRetries: r.max_tool_retries }),
    })
  }

  /**
   * The configured HistoryGuard (null without a `history_guard:` section), one per `scope`: an object that stands
   * for one conversation, by default the current `Session` (each `run()` has its own). Without a scope, a new guard
   * each call, which has no earlier call to find drops against.
   */
  historyGuard(scope: object | undefined = Session.current()): HistoryGuard | null {
    const h = this.resolved.raw.history_guard
    if (!h) return null
    let guard = scope && this.#guards.get(scope)
    if (!guard) {
      guard = new HistoryGuard({
        ...(h.max_tokens !== undefined && { maxTokens: h.max_tokens }),
        ...(h.max_messages !== undefined && { maxMessages: h.max_messages }),
        ...(h.warn_at !== undefined && { warnAt: h.warn_at }),
        ...(h.detect_duplicates !== undefined && { detectDuplicates: h.detect_duplicates }),
        // prepareMessages() checks drops itself, on the caller's own messages (see there).
        detectDrops: false,
      })
      if (scope) this.#guards.set(scope, guard)
    }
    return guard
  }

  /** True when `message_validator:` is on. */
  get validatesMessages(): boolean {
    const m = this.resolved.raw.message_validator
    return m === true || (typeof m === "object" && m !== null && m.enabled)
  }

  /**
   * Repairs the transcript (when `message_validator` is on), then enforces `history_guard` with the guard of
   * `scope` (see historyGuard()), so messages dropped since its last call raise `HistoryDropError` (unless
   * `history_guard.detect_drops: false`).
   */
  prepareMessages<M>(messages: readonly M[], scope?: object): readonly M[] {
    const guard = this.historyGuard(scope)
    // Drops are the caller's: compared on its own messages, not the repaired ones, where the validator's stand-in
    // for a call still unanswered is replaced by the real result later (a false HistoryDropError).
    if (guard && this.#baselined.has(guard) && this.resolved.raw.history_guard?.detect_drops !== false)
      guard.checkForDrops(messages)
    let out = messages
    if (this.validatesMessages) out = new MessageValidator().repair(out).messages
    if (guard) {
      out = guard.validate(out)
      guard.accept(messages)
      this.#baselined.add(guard)
    }
    // Inside a run with state_flush, the prepared transcript is part of what a cancelled run leaves to resume.
    runScope()?.getStore()?.flush?.record({ messages: out })
    return out
  }
}
