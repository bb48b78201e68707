import { type AsyncLocalStorageLike, asyncContextClass } from "../context/async-context.ts"
import { protect } from "../context/protect.ts"
import { Session } from "../context/session.ts"
import {
  ActionLedger,
  type CallMeta,
  type LedgerStorage,
  MemoryLedgerStorage,
  type TransitionContext,
} from "../ledger/index.ts"
import {
  MemoryStateFlushStore,
  StateFlush,
  type StateFlushRun,
  type StateFlushStore,
} from "../state/index.ts"
import { bounded } from "../tools/bounded.ts"
import type { FieldSpecSchema } from "../tools/field-spec.ts"
import { ToolRegistry } from "../tools/registry.ts"
import { ToolRunner } from "../tools/runner.ts"
import { HistoryGuard } from "../transcript/history-guard.ts"
import { MessageValidator } from "../transcript/message-validator.ts"
import { ConfigError } from "./errors.ts"
import type { ResolvedConfig, ResolvedStorage, ResolvedTool, ResolvedTransition } from "./normalize.ts"

/** Builds the store a storage choice names. Node, Deno and Bun get one from `loadConfig`; Workers pass their own. */
export type StorageFactory = (storage: ResolvedStorage) => LedgerStorage | Promise<LedgerStorage>

/** Options for `MyceliumConfig` (through `loadConfigFromString` / `loadConfig`). */
export interface MyceliumConfigOptions {
  /** Builds non-memory stores. Without one, only `storage: memory` works. */
  storageFactory?: StorageFactory
  /** Time in epoch seconds for every ledger the config builds (tests pass a `ManualClock`). */
  clock?: { now(): number }
  /** Where one-time warnings go. Default `console.warn`. */
  onWarning?: (message: string) => void
  /** Builds the `state_flush:` store for `file`, `indexeddb` and `durable_object` (Node: `loadConfig` passes one). */
  stateStoreFactory?: (choice: StateStoreChoice) => StateFlushStore | Promise<StateFlushStore>
}

/** The `state_flush:` storage choice. */
export interface StateStoreChoice {
  readonly kind: "memory" | "file" | "indexeddb" | "durable_object"
  readonly path?: string
  readonly database?: string
  readonly binding?: string
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

type AnyBody = (args: never, tx: TransitionContext) => unknown
type Instrumented<T extends Record<string, AnyBody>> = {
  [K in keyof T]: T[K] extends (args: infer A, tx: TransitionContext) => infer R
    ? ConfiguredTool<A, R>
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
  readonly warnings: readonly string[]
  readonly resolved: ResolvedConfig
  readonly #options: MyceliumConfigOptions
  readonly #stores = new Map<string, Promise<LedgerStorage>>()
  readonly #ledgers = new Map<string, Promise<ActionLedger>>()
  #stateFlush: Promise<StateFlush | null> | undefined

  constructor(resolved: ResolvedConfig, options: MyceliumConfigOptions = {}) {
    this.resolved = resolved
    this.profile = resolved.profile
    this.transition = resolved.transition
    this.tools = resolved.tools
    this.warnings = resolved.warnings
    // Warnings are listed, not printed: each ledger warns once on first use, and `mycelium doctor` shows the list.
    this.#options = options
  }

  /** The store for a storage choice, one instance per distinct choice (tools on one file share it). */
  storage(choice: ResolvedStorage): Promise<LedgerStorage> {
    const key = JSON.stringify(choice)
    let store = this.#stores.get(key)
    if (!store) {
      const factory = this.#options.storageFactory
      if (choice.kind === "memory" && !factory) store = Promise.resolve(new MemoryLedgerStorage())
      else if (!factory)
        store = Promise.reject(
          new ConfigError(
            `storage '${choice.kind}' needs a store factory: load the file with loadConfig() from ` +
              `'mycelium-runtime/node' (Node, Deno, Bun) or pass { storageFactory } to loadConfigFromString()`,
          ),
        )
      else store = Promise.resolve(factory(choice))
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
      ledger = this.storage(l.storage).then(
        (storage) =>
          new ActionLedger({
            storage,
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
  apply<A, R>(name: string, fn: ConfiguredToolBody<A, R>): ConfiguredTool<A, R> {
    const tool = this.tools.get(name)
    let body = fn as (args: A, tx?: TransitionContext) => unknown
    if (tool?.protect) {
      body = protect(body as (args: A & object) => unknown, {
        name,
        ...(tool.protect.ttl !== undefined && { ttl: tool.protect.ttl }),
        ...(tool.protect.entityParam !== undefined && {
          entityParam: tool.protect.entityParam as keyof A & string,
        }),
      }) as typeof body
    }
    if (tool?.bounded) {
      const b = tool.bounded
      body = bounded(body as (args: A & object) => unknown, {
        name,
        ...(b.schema && { schema: b.schema as FieldSpecSchema }),
        ...(b.output_schema && { outputSchema: b.output_schema as FieldSpecSchema }),
        ...(b.entity_param && { entityParam: b.entity_param }),
        ...(b.entity_pattern && { entityPattern: b.entity_pattern }),
        ...(b.allowed_paths && { allowedPaths: b.allowed_paths }),
        ...(b.path_param && { pathParam: b.path_param }),
      }) as typeof body
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
      call = async (args, meta) => (await wrapped)(args as Record<string, unknown>, meta)
    } else {
      call = async (args) => body(args, undefined)
    }
    const configured = async (args: A, meta: CallMeta = {}) => {
      if (isTransitionContext(meta)) meta = {}
      const scope = runScope()?.getStore()
      const withScope = scope && meta.runId === undefined ? { ...meta, runId: scope.runId } : meta
      return call(args, withScope)
    }
    Object.defineProperty(configured, "toolName", { value: name })
    return configured as ConfiguredTool<A, R>
  }

  /** Wraps every function of `fns` by its key: `const tools = config.instrument({ send_payment, search_docs })`. */
  instrument<T extends Record<string, AnyBody>>(fns: T): Instrumented<T> {
    const out: Record<string, unknown> = {}
    for (const [name, fn] of Object.entries(fns))
      out[name] = this.apply(name, fn as ConfiguredToolBody<unknown, unknown>)
    return out as Instrumented<T>
  }

  /** The `state_flush:` section as a `StateFlush`, or null without one. One instance per config. */
  stateFlush(): Promise<StateFlush | null> {
    this.#stateFlush ??= (async () => {
      const sf = this.resolved.raw.state_flush
      if (!sf) return null
      const choice: StateStoreChoice = {
        kind: sf.storage,
        ...(sf.path !== undefined && { path: sf.path }),
        ...(sf.database !== undefined && { database: sf.database }),
        ...(sf.binding !== undefined && { binding: sf.binding }),
      }
      const factory = this.#options.stateStoreFactory
      let storage: StateFlushStore
      if (choice.kind === "memory" && !factory) storage = new MemoryStateFlushStore()
      else if (!factory)
        throw new ConfigError(
          `state_flush storage '${choice.kind}' needs a store factory: load the file with loadConfig() from ` +
            `'mycelium-runtime/node/config', or pass { stateStoreFactory }`,
        )
      else storage = await factory(choice)
      return new StateFlush({ storage, flushOn: sf.flush_on, flushOnComplete: sf.flush_on_complete })
    })()
    return this.#stateFlush
  }

  /** The state a run flushed last (`state_flush:`), to start the next attempt from; null when there is none. */
  async resume(runId: string): Promise<Readonly<Record<string, unknown>> | null> {
    const flush = await this.stateFlush()
    if (!flush || !(await flush.load(runId))) return null
    return flush.resume(runId)
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
    const enter = <T>(scope: RunScope, body: () => T): T => {
      const als = runScope()
      return als ? als.run(scope, () => session.run(body)) : session.run(body)
    }
    if (!flush) {
      const never = new AbortController()
      const signal = options.signal ?? never.signal
      const state: Record<string, unknown> = { ...options.initial }
      const run: ConfigRun = { runId, session, signal, state, record: (patch) => Object.assign(state, patch) }
      return enter({ runId, flush: null }, () => fn(run))
    }
    return flush.run(
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

  /** The allowlist `registry:` configures (`auto` or no `allowed` list: every configured tool). */
  registry(): ToolRegistry {
    const r = this.resolved.raw.registry
    const allowed = r?.allowed?.length ? r.allowed : [...this.tools.keys()]
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

  /** The configured HistoryGuard, or null without a `history_guard:` section. */
  historyGuard(): HistoryGuard | null {
    const h = this.resolved.raw.history_guard
    if (!h) return null
    return new HistoryGuard({
      ...(h.max_tokens !== undefined && { maxTokens: h.max_tokens }),
      ...(h.max_messages !== undefined && { maxMessages: h.max_messages }),
      ...(h.warn_at !== undefined && { warnAt: h.warn_at }),
      ...(h.detect_duplicates !== undefined && { detectDuplicates: h.detect_duplicates }),
    })
  }

  /** True when `message_validator:` is on. */
  get validatesMessages(): boolean {
    const m = this.resolved.raw.message_validator
    return m === true || (typeof m === "object" && m !== null && m.enabled)
  }

  /** Repairs the transcript (when `message_validator` is on), then enforces `history_guard` limits. */
  prepareMessages<M>(messages: readonly M[]): readonly M[] {
    let out = messages
    if (this.validatesMessages) out = new MessageValidator().repair(out).messages
    const guard = this.historyGuard()
    if (guard) out = guard.validate(out)
    // Inside a run with state_flush, the prepared transcript is part of what a cancelled run leaves to resume.
    runScope()?.getStore()?.flush?.record({ messages: out })
    return out
  }
}
