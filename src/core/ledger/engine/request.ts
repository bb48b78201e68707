// What a call asks of the claim loop, derived once per call before anything touches storage.
import type { LedgerCore } from "../core.ts"
import { MissingRequestIdentityError } from "../errors.ts"
import { freshRow } from "../machine/transitions.ts"
import { ToolTransitionBinding } from "../model/binding.ts"
import { argumentsStoredAndKeyed, type JsonValue } from "../model/canonical.ts"
import type { Decision, LedgerEntry } from "../model/entry.ts"
import { isConsequential } from "../model/enums.ts"
import {
  argsFingerprint,
  type CallMeta,
  deriveDispatchId,
  parseExplicitRequestId,
  pyStr,
  requestIdFromArgument,
  resolveScope,
  type TransitionScope,
  transitionKey,
} from "../model/identity.ts"
import { type KeyedMeta, onKeyed } from "../model/on-keyed.ts"

export interface ClaimRequest {
  readonly tool: string
  readonly requestId: string
  /** The caller named the request id: identity conflicts are checked even with drift policy "off". */
  readonly explicitId: boolean
  /** The request id hashes the args fingerprint, so a row at this id has these arguments. */
  readonly keyedByArgs: boolean
  readonly binding: ToolTransitionBinding | null
  /** Which gate table judges the call. */
  readonly mode: ClaimMode
  /** The tool declared a binding (`binding` may also be the strict unclassified policy's). */
  readonly bound: boolean
  /**
   * The args fingerprint of the arguments as a row stores them, compared with stored rows. It differs from the
   * one inside the transition key only for integers beyond 2^53 and kept floats, which a row cannot hold exactly.
   */
  readonly fingerprint: string
  /** The fingerprint inside the transition key (Python's exact integers). */
  readonly keyFingerprint: string
  /** This call's effect id: a row claimed under the same binding, arguments and context holds the same. */
  readonly effectId: string
  readonly scope: TransitionScope
  readonly dispatchId: string | null
  readonly providerKey: string | null
  readonly leaseTtl: number
  readonly pollInterval: number
  readonly pollTimeout: number | null
  readonly signal?: AbortSignal
  /** Told the request id once the row stored there proved to be this call's (on-keyed.ts). */
  readonly ownRow?: ((requestId: string) => void) | undefined
  /** A new in-flight row (unstamped) for this call. */
  fresh(prior: LedgerEntry | null): LedgerEntry
}

export type ClaimOutcome =
  | { readonly owned: false; readonly entry: LedgerEntry }
  | { readonly owned: true; readonly entry: LedgerEntry; readonly authorizedReexec: boolean }

/** Which gate table judges the call: `read` tools, side-effecting tools, or tools without a binding. */
export type ClaimMode = "read" | "side_effect" | "unclassified"

/** Per-tool overrides of the ledger's lease and polling policy. */
export interface CallTiming {
  readonly leaseTtl?: number
  readonly pollInterval?: number
  readonly pollTimeout?: number | null
}

const UNCLASSIFIED_STRICT = ToolTransitionBinding.forTool({
  agentId: "unclassified",
  policyVersion: "unclassified",
  sideEffectClass: "non_idempotent_mutate",
})

/** Everything a call needs before it touches storage. Pure but for the one-time no-identity warning. */
export function prepareCall(
  core: LedgerCore,
  tool: string,
  declared: ToolTransitionBinding | null,
  args: Readonly<Record<string, unknown>>,
  meta: CallMeta,
  decision: () => Decision | null,
  opts: CallTiming = {},
): ClaimRequest {
  const { stored, keyed } = argumentsStoredAndKeyed(args)
  const jsonArgs = stored as Record<string, JsonValue>
  const binding = declared ?? (core.policy.unclassifiedPolicy === "strict" ? UNCLASSIFIED_STRICT : null)
  const keyParam = binding?.providerIdempotencyKeyParam ?? null
  const scope = resolveScope(declared?.scopeFrom ?? {}, args, meta)
  const fingerprint = argsFingerprint(jsonArgs, [], keyParam)
  // The key hashes exact integers (Python's); stored rows are compared by what they can hold (usually the same).
  const keyFingerprint =
    keyed === stored ? fingerprint : argsFingerprint(keyed as Record<string, unknown>, [], keyParam)
  const dispatchId = deriveDispatchId(meta)
  const derivedKey = (): string =>
    transitionKey({
      tool,
      binding: binding as ToolTransitionBinding,
      argsFingerprint: keyFingerprint,
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
    core.policy.requestIdentityPolicy === "require_explicit" &&
    isConsequential(declared.sideEffectClass)
  ) {
    throw new MissingRequestIdentityError(tool)
  } else if (declared) {
    requestId = derivedKey()
    keyedByArgs = true
  } else if (dispatchId) {
    requestId = dispatchId
  } else {
    core.warnOnce(
      `no-identity:${tool}`,
      `Tool '${tool}' has no binding and was called without a toolCallId or requestId, so the ledger cannot deduplicate it: pass one.`,
    )
    requestId = `no-session:${tool}:${globalThis.crypto.randomUUID()}`
  }
  const effectId = declared ? (keyedByArgs ? requestId : derivedKey()) : requestId
  const rawKey = keyParam !== null ? args[keyParam] : undefined
  // As the original's extract_provider_idempotency_key writes it (str()), so either side's row matches the other's key.
  const providerKey = rawKey == null ? null : pyStr(rawKey)
  return {
    tool,
    requestId,
    explicitId,
    keyedByArgs,
    binding,
    mode: !binding ? "unclassified" : binding.sideEffectClass === "read" ? "read" : "side_effect",
    bound: declared !== null,
    fingerprint,
    keyFingerprint,
    effectId,
    scope,
    dispatchId,
    providerKey,
    leaseTtl: opts.leaseTtl ?? core.policy.leaseTtl,
    pollInterval: opts.pollInterval ?? core.policy.pollInterval,
    pollTimeout: opts.pollTimeout === undefined ? core.policy.pollTimeout : opts.pollTimeout,
    ...(meta.signal ? { signal: meta.signal } : {}),
    ownRow: (meta as KeyedMeta)[onKeyed],
    fresh: (prior) =>
      freshRow(core.owner, core.clock.now(), {
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
}
