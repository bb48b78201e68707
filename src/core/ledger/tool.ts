// `ledger.tool(options, fn)`: the per-call lifecycle of a ledgered tool.
import type { ActionLedger } from "./action-ledger.ts"
import { ToolTransitionBinding, type ToolTransitionBindingInit } from "./binding.ts"
import { cloneJson, type JsonValue, toJsonValue } from "./canonical.ts"
import type { ClaimRequest } from "./claim.ts"
import { throwIfAborted } from "./clock.ts"
import type { Decision, LedgerEntry } from "./entry.ts"
import { isConsequential, type SideEffectBoundary } from "./enums.ts"
import {
  LedgerError,
  LedgerHardBlockError,
  LedgerOutcomeAlreadySetError,
  MissingRequestIdentityError,
} from "./errors.ts"
import {
  argsFingerprint,
  type CallMeta,
  deriveDispatchId,
  parseExplicitRequestId,
  requestIdFromArgument,
  resolveScope,
  transitionKey,
} from "./identity.ts"
import type { DecisionIntent } from "./reconcile.ts"
import { throwIfUnstorable } from "./result-limits.ts"
import { ALLOWED_DECISION, errorText } from "./rows.ts"

export interface LedgeredToolOptions {
  /** Tool name: part of the transition key and of every row. */
  readonly name: string
  /** Side-effect class and policy. Without one the tool is "unclassified" (see `unclassifiedPolicy`). */
  readonly binding?: ToolTransitionBinding | ToolTransitionBindingInit
  readonly leaseTtl?: number
  readonly pollInterval?: number
  readonly pollTimeout?: number | null
}

export type ToolBody<A, R> = (args: A, tx: TransitionContext) => Promise<R> | R

export interface LedgeredTool<A, R> {
  (args: A, meta?: CallMeta): Promise<R>
  readonly toolName: string
  readonly binding: ToolTransitionBinding | null
  readonly ledger: ActionLedger
}

const UNCLASSIFIED_STRICT = ToolTransitionBinding.forTool({
  agentId: "unclassified",
  policyVersion: "unclassified",
  sideEffectClass: "non_idempotent_mutate",
})

/** @internal everything a call needs before it touches storage. Pure. */
export function prepareCall(
  ledger: ActionLedger,
  tool: string,
  declared: ToolTransitionBinding | null,
  args: Readonly<Record<string, unknown>>,
  meta: CallMeta,
  decision: () => Decision | null,
  opts: { leaseTtl?: number; pollInterval?: number; pollTimeout?: number | null } = {},
): { request: ClaimRequest; mode: "read" | "side_effect" | "unclassified" } {
  const jsonArgs = toJsonValue(args) as Record<string, JsonValue>
  const binding = declared ?? (ledger.unclassifiedPolicy === "strict" ? UNCLASSIFIED_STRICT : null)
  const keyParam = binding?.providerIdempotencyKeyParam ?? null
  const scope = resolveScope(declared?.scopeFrom ?? {}, args, meta)
  const fingerprint = argsFingerprint(jsonArgs, [], keyParam)
  const dispatchId = deriveDispatchId(meta)
  const derivedKey = (): string =>
    transitionKey({
      tool,
      binding: binding as ToolTransitionBinding,
      argsFingerprint: fingerprint,
      scope,
      dispatchId,
    })

  let requestId: string
  let explicitId = false
  let keyedByArgs = false
  if (meta.requestId !== undefined) {
    requestId = parseExplicitRequestId(meta.requestId)
    explicitId = true
  } else if (declared?.requestIdFrom) {
    requestId = requestIdFromArgument(tool, declared.requestIdFrom, args)
  } else if (
    declared &&
    ledger.requestIdentityPolicy === "require_explicit" &&
    isConsequential(declared.sideEffectClass)
  ) {
    throw new MissingRequestIdentityError(tool)
  } else if (declared) {
    requestId = derivedKey()
    keyedByArgs = true
  } else if (dispatchId) {
    requestId = dispatchId
  } else {
    ledger.warnOnce(
      `no-identity:${tool}`,
      `Tool '${tool}' was called without a toolCallId or requestId and has no binding; the ledger cannot deduplicate this call. A random UUID will be used.`,
    )
    requestId = `no-session:${tool}:${globalThis.crypto.randomUUID()}`
  }
  const effectId = declared ? (keyedByArgs ? requestId : derivedKey()) : requestId
  const rawKey = keyParam !== null ? args[keyParam] : undefined
  const providerKey = rawKey == null ? null : String(rawKey)
  const mode = !binding ? "unclassified" : binding.sideEffectClass === "read" ? "read" : "side_effect"

  const request: ClaimRequest = {
    tool,
    requestId,
    explicitId,
    keyedByArgs,
    binding,
    fingerprint,
    scope,
    dispatchId,
    providerKey,
    leaseTtl: opts.leaseTtl ?? ledger.leaseTtl,
    pollInterval: opts.pollInterval ?? ledger.pollInterval,
    pollTimeout: opts.pollTimeout === undefined ? ledger.pollTimeout : opts.pollTimeout,
    ...(meta.signal ? { signal: meta.signal } : {}),
    fresh: (prior) =>
      ledger.freshEntry({
        tool,
        requestId,
        args: jsonArgs,
        meta,
        scope,
        binding: declared,
        effectId,
        providerKey,
        decision: decision(),
        prior,
      }),
  }
  return { request, mode }
}

/** Evaluates the ledger's predicates. Runs before any claim, so a denial writes nothing. */
async function decide(ledger: ActionLedger, intent: DecisionIntent): Promise<Decision> {
  const verdicts: Array<{ name: string; allowed: boolean; reason: string | null }> = []
  for (const p of ledger.predicates) {
    const v = await p.check(intent)
    const allowed = typeof v === "boolean" ? v : v.allowed
    const reason = typeof v === "boolean" ? null : (v.reason ?? null)
    verdicts.push({ name: p.name, allowed, reason })
  }
  const denied = verdicts.filter((v) => !v.allowed)
  return {
    allowed: denied.length === 0,
    verdicts,
    deniedReasons: denied.map((v) => v.reason ?? `${v.name}: policy predicate refused`),
  }
}

export function createLedgeredTool<A extends Record<string, unknown>, R>(
  ledger: ActionLedger,
  options: LedgeredToolOptions,
  fn: ToolBody<A, R>,
): LedgeredTool<A, R> {
  if (!options.name) throw new TypeError("ledger.tool() needs a name")
  const binding = options.binding ? ToolTransitionBinding.from(options.binding) : null
  const tool = options.name
  if (
    binding &&
    isConsequential(binding.sideEffectClass) &&
    (ledger.storage as { kind?: string }).kind === "memory"
  ) {
    ledger.warnOnce(
      `memory:${tool}`,
      `Tool '${tool}' (${binding.sideEffectClass}) is ledgered in process memory: another process or a restart will not see its transitions. Use a durable storage adapter in production.`,
    )
  }

  const call = async (args: A, meta: CallMeta = {}): Promise<R> => {
    throwIfAborted(meta.signal)
    let decision: Decision | null = null
    const { request, mode } = prepareCall(ledger, tool, binding, args, meta, () => decision, options)
    const verdict =
      ledger.predicates.length === 0
        ? ALLOWED_DECISION
        : await decide(ledger, {
            tool,
            requestId: request.requestId,
            args,
            sideEffectClass: binding?.sideEffectClass ?? null,
          })
    if (!verdict.allowed) {
      const row = await ledger.get(request.requestId)
      if (row?.terminalOutcome === "COMPLETED") {
        throwIfUnstorable(row)
        return cloneJson(row.result) as R
      }
      throw new LedgerHardBlockError(
        `decision denied for '${request.requestId}': ${verdict.deniedReasons.join("; ") || "policy predicate refused"}`,
      )
    }
    // The allowed decision rides on the claim write itself: one write instead of claim + decision CAS.
    if (binding) decision = verdict
    const claimed = await ledger.runClaim(request, mode)
    if (!claimed.owned) {
      throwIfUnstorable(claimed.entry)
      return cloneJson(claimed.entry.result) as R
    }

    const tx = new TransitionContext(ledger, claimed.entry, meta.signal, binding)
    tx.startAutoRenew(options.leaseTtl ?? ledger.leaseTtl)
    let result: R
    try {
      result = await fn(args, tx)
    } catch (err) {
      await tx.stop()
      await tx.recordFailure(err)
      throw err
    }
    await tx.stop()
    try {
      await tx.complete(result)
    } catch (e) {
      if (!(e instanceof LedgerOutcomeAlreadySetError)) throw e
      ledger.warn(`tool result discarded for '${tool}' request '${request.requestId}': ${e.message}`)
    }
    return result
  }
  return Object.assign(call, { toolName: tool, binding, ledger })
}

// Made on first use: workerd refuses to create an AbortController while a module loads.
let never: AbortSignal | null = null
function neverAborts(): AbortSignal {
  never ??= new AbortController().signal
  return never
}

/**
 * What a ledgered tool body gets: the claim it holds and the side-effect boundary helpers. Writes are serialized
 * and fenced; a stale worker (its claim taken over) cannot move the row.
 */
export class TransitionContext {
  readonly #ledger: ActionLedger
  readonly #binding: ToolTransitionBinding | null
  #current: LedgerEntry
  #chain: Promise<unknown> = Promise.resolve()
  /** Boundary known to this worker; `crossed` after a clean `sideEffect()` is folded into the completion write. */
  #boundary: SideEffectBoundary
  #timer: ReturnType<typeof setInterval> | null = null
  readonly signal: AbortSignal

  constructor(
    ledger: ActionLedger,
    entry: LedgerEntry,
    signal: AbortSignal | undefined,
    binding: ToolTransitionBinding | null,
  ) {
    this.#ledger = ledger
    this.#current = entry
    this.#boundary = entry.sideEffectBoundary
    this.#binding = binding
    this.signal = signal ?? neverAborts()
  }

  get requestId(): string {
    return this.#current.requestId
  }
  get fence(): number {
    return this.#current.fence
  }
  /** The row as this worker last wrote it. */
  get entry(): LedgerEntry {
    return this.#current
  }

  #write(op: (current: LedgerEntry) => Promise<LedgerEntry>): Promise<void> {
    const run = this.#chain.then(async () => {
      this.#current = await op(this.#current)
    })
    this.#chain = run.catch(() => undefined)
    return run
  }

  /**
   * Marks the point of no return: `maybe_crossed` is written durably before `fn` runs, so a crash inside it leaves
   * the transition UNKNOWN and a redispatch hard-blocks instead of paying twice.
   */
  async sideEffect<T>(fn: () => Promise<T> | T): Promise<T> {
    await this.markMaybeCrossed()
    const out = await fn()
    this.#boundary = "crossed"
    return out
  }

  async markMaybeCrossed(): Promise<void> {
    if (this.#boundary === "maybe_crossed" || this.#boundary === "crossed") return
    await this.#write((c) => this.#ledger.advanceBoundaryHeld(c, "maybe_crossed"))
    this.#boundary = "maybe_crossed"
  }

  async markCrossed(): Promise<void> {
    await this.#write((c) => this.#ledger.advanceBoundaryHeld(c, "crossed"))
    this.#boundary = "crossed"
  }

  /** Stores the provider's handle (payment intent id, message id, the idempotency key sent) for reconciliation. */
  recordExternalOperation(ref: string): Promise<void> {
    return this.#write((c) => this.#ledger.attachRefHeld(c, ref))
  }

  renewLease(leaseTtl?: number): Promise<void> {
    return this.#write((c) => this.#ledger.renewHeld(c, leaseTtl))
  }

  /** @internal */
  startAutoRenew(leaseTtl: number): void {
    const every = this.#ledger.leaseRenewInterval
    if (!(leaseTtl > 0) || !(every > 0)) return
    this.#timer = setInterval(() => {
      this.renewLease(leaseTtl).catch((e: unknown) => {
        // A ledger refusal means the claim is gone; renewing further is pointless. Storage hiccups retry next tick.
        if (e instanceof LedgerError && !(e.name === "LedgerStorageUnavailableError")) this.#clearTimer()
      })
    }, every * 1000)
    ;(this.#timer as { unref?: () => void }).unref?.()
  }

  #clearTimer(): void {
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
  }

  /** @internal stops renewal and waits for writes in flight. */
  async stop(): Promise<void> {
    this.#clearTimer()
    await this.#chain
  }

  /** @internal */
  async complete(result: unknown): Promise<void> {
    await this.#write((c) => this.#ledger.completeHeld(c, result))
  }

  /** @internal failure classification from the boundary; recording problems never mask the tool's error. */
  async recordFailure(err: unknown): Promise<void> {
    const text = errorText(err)
    try {
      if (this.#boundary === "not_crossed") await this.#write((c) => this.#ledger.failHeld(c, text, false))
      else if (this.#boundary === "maybe_crossed")
        await this.#write((c) => this.#ledger.markUnknownHeld(c, text))
      else await this.#write((c) => this.#ledger.failHeld(c, text, true))
    } catch (e) {
      this.#ledger.warn(
        `could not record the failure of '${this.#current.tool}' request '${this.requestId}': ${errorText(e)}`,
      )
    }
  }

  /** @internal */
  get binding(): ToolTransitionBinding | null {
    return this.#binding
  }
}
