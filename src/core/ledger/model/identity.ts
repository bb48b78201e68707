// Identity of a transition: what makes two calls "the same call". Keys match the Python original's.

import { LedgerConfigError, MissingRequestIdentityError } from "../errors.ts"
import type { ScopeField, ToolTransitionBinding } from "./binding.ts"
import { canonicalArgsJson, canonicalJson, canonicalNumber, canonicalString } from "./canonical.ts"
import { TRANSITION_SCHEMA } from "./enums.ts"
import { sha256Hex } from "./sha256.ts"

/** Bookkeeping names (Python kwargs) never part of the args fingerprint. */
export const LEDGER_KWARG_KEYS: ReadonlySet<string> = new Set([
  "request_id",
  "tool_call_id",
  "thread_id",
  "run_id",
  "node",
  "state_ref",
  "decision_id",
  "parent_request_id",
  "handoff_id",
])

/** Where a call sits: the scope part of its identity. */
export interface TransitionScope {
  readonly threadId: string
  readonly runId: string
  readonly node: string
}

export const EMPTY_SCOPE: TransitionScope = Object.freeze({ threadId: "", runId: "", node: "" })

/**
 * SHA-256 of `{"args": [...], "kwargs": {...}}` in canonical JSON, bookkeeping keys removed.
 * A TypeScript tool's arguments object plays the part of Python's keyword arguments.
 */
export function argsFingerprint(
  kwargs: Readonly<Record<string, unknown>>,
  args: readonly unknown[] = [],
  exclude?: string | null,
): string {
  return sha256Hex(canonicalArgsJson(args, kwargs, LEDGER_KWARG_KEYS, exclude))
}

export interface TransitionPreimageInput {
  readonly tool: string
  readonly binding: Pick<ToolTransitionBinding, "agentId" | "policyVersion" | "sideEffectClass">
  readonly argsFingerprint: string
  readonly scope?: TransitionScope
  readonly dispatchId?: string | null
  /** Sorted `"dest_class:entity"` strings from an entity guard, if any. */
  readonly destination?: readonly string[]
}

export function buildTransitionPreimage(input: TransitionPreimageInput): Record<string, unknown> {
  const s = input.scope ?? EMPTY_SCOPE
  const pre: Record<string, unknown> = {
    schema: TRANSITION_SCHEMA,
    scope: { thread_id: s.threadId, run_id: s.runId, node: s.node },
    tool: input.tool,
    args_fingerprint: input.argsFingerprint,
    destination: [...(input.destination ?? [])].sort(),
    side_effect_class: input.binding.sideEffectClass,
    agent_id: input.binding.agentId,
    policy_version: input.binding.policyVersion,
  }
  if (input.dispatchId != null) pre.dispatch_id = input.dispatchId
  return pre
}

/** The transition key: SHA-256 of the canonical preimage. Also the derived request id and effect id. */
export function transitionKey(input: TransitionPreimageInput): string {
  return sha256Hex(preimageJson(input))
}

/**
 * `canonicalJson(buildTransitionPreimage(input))`, written directly: the keys are fixed, so their sorted order is
 * too. This runs on every ledgered call; tests hold it to the generic encoder.
 */
export function preimageJson(input: TransitionPreimageInput): string {
  const s = input.scope ?? EMPTY_SCOPE
  const b = input.binding
  const dest = input.destination?.length ? canonicalJson([...input.destination].sort()) : "[]"
  const dispatch = input.dispatchId != null ? `,"dispatch_id":${canonicalString(input.dispatchId)}` : ""
  return (
    `{"agent_id":${canonicalString(b.agentId)},"args_fingerprint":${canonicalString(input.argsFingerprint)},` +
    `"destination":${dest}${dispatch},"policy_version":${canonicalString(b.policyVersion)},` +
    `"schema":"${TRANSITION_SCHEMA}","scope":{"node":${canonicalString(s.node)},"run_id":${canonicalString(s.runId)},` +
    `"thread_id":${canonicalString(s.threadId)}},"side_effect_class":${canonicalString(b.sideEffectClass)},` +
    `"tool":${canonicalString(input.tool)}}`
  )
}

/** Call metadata: how the framework identifies this dispatch. Never passed to the tool. */
export interface CallMeta {
  /** The model's tool-call id; a redispatch carries the same one. */
  toolCallId?: string
  /** A server-owned identity (e.g. `"send_payment:order-42"`); used verbatim as the storage key. */
  requestId?: string
  threadId?: string
  runId?: string
  node?: string
  stateRef?: string
  decisionId?: string
  parentRequestId?: string
  handoffId?: string
  /** Aborts waiting (polling) and is handed to the tool as `tx.signal`. */
  signal?: AbortSignal
}

/**
 * Adds the bookkeeping kwargs a row stores (snake_case, non-null only, as the Python original stores them) to
 * `kwargs`, a row's copy of the arguments; they override arguments of the same name.
 */
export function withMetaKwargs<T extends Record<string, unknown>>(
  kwargs: T,
  meta: CallMeta,
  scope: TransitionScope,
): T {
  const out = kwargs as Record<string, unknown>
  // Each set only when the meta has it, so an argument of the same name keeps its value unless the meta overrides.
  // Spelled out, in the original's order: a loop over the names reads `meta` by a computed key, several times slower.
  if (typeof meta.requestId === "string") out.request_id = meta.requestId
  if (typeof meta.toolCallId === "string") out.tool_call_id = meta.toolCallId
  if (typeof meta.threadId === "string") out.thread_id = meta.threadId
  if (typeof meta.runId === "string") out.run_id = meta.runId
  if (typeof meta.node === "string") out.node = meta.node
  if (typeof meta.stateRef === "string") out.state_ref = meta.stateRef
  if (typeof meta.decisionId === "string") out.decision_id = meta.decisionId
  if (typeof meta.parentRequestId === "string") out.parent_request_id = meta.parentRequestId
  if (typeof meta.handoffId === "string") out.handoff_id = meta.handoffId
  if (typeof meta.threadId !== "string" && scope.threadId) out.thread_id = scope.threadId
  if (typeof meta.runId !== "string" && scope.runId) out.run_id = scope.runId
  if (typeof meta.node !== "string" && scope.node) out.node = scope.node
  return kwargs
}

/**
 * The scope a call's `scopeFrom` argument gives `field`, as the original reads it: `pyStr()` of an own argument,
 * undefined when the call has none. Own members only, as a Python kwargs dict: `scopeFrom: { thread_id:
 * "constructor" }` must not read Object.
 */
export function scopeArg(
  scopeFrom: Readonly<Partial<Record<ScopeField, string>>>,
  args: Readonly<Record<string, unknown>>,
  field: ScopeField,
): string | undefined {
  const src = scopeFrom[field]
  const v = src === undefined || !Object.hasOwn(args, src) ? undefined : args[src]
  return v === undefined ? v : pyStr(v)
}

/**
 * Python's `str()` of an argument as json.loads gave it to the original: null is "None", true "True", 1e-7 "1e-07".
 * A list or object is JavaScript's String() of it, not the original's repr (docs/python-differences.md).
 */
export function pyStr(v: unknown): string {
  if (typeof v === "string") return v
  if (typeof v === "number") return canonicalNumber(v)
  return v === null ? "None" : v === true ? "True" : v === false ? "False" : String(v)
}

/** Scope: binding `scopeFrom` arguments, then explicit metadata, over an ambient scope. */
export function resolveScope(
  scopeFrom: Readonly<Partial<Record<ScopeField, string>>>,
  args: Readonly<Record<string, unknown>>,
  meta: CallMeta,
  ambient: TransitionScope = EMPTY_SCOPE,
): TransitionScope {
  return {
    threadId: meta.threadId ?? scopeArg(scopeFrom, args, "thread_id") ?? ambient.threadId,
    runId: meta.runId ?? scopeArg(scopeFrom, args, "run_id") ?? ambient.runId,
    node: meta.node ?? scopeArg(scopeFrom, args, "node") ?? ambient.node,
  }
}

/** `toolCallId`, else an explicit request id, else none. A null tool-call id is no id (not "None"). */
export function deriveDispatchId(meta: CallMeta): string | null {
  if (typeof meta.toolCallId === "string" && meta.toolCallId) return meta.toolCallId
  if (typeof meta.requestId === "string") return parseExplicitRequestId(meta.requestId)
  return null
}

// Python's str.strip(): its whitespace (str.isspace) has U+001C..U+001F and U+0085, which JavaScript's trim() keeps,
// and not U+FEFF, which trim() strips. A business key with one at an end keys as the original keys it.
const pyStrip = (s: string): string =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: U+001C..U+001F are Python whitespace, the point here
  s.replace(/^(?:[^\S\ufeff]|[\x1c-\x1f\x85])+|(?:[^\S\ufeff]|[\x1c-\x1f\x85])+$/g, "")

export function parseExplicitRequestId(value: unknown): string {
  if (typeof value !== "string" || !value.trim()) {
    throw new LedgerConfigError(`request_id must be a non-empty string, got ${JSON.stringify(value)}`)
  }
  return value
}

/** `"{tool}:{field}:{value}"` from a business-key argument. */
export function requestIdFromArgument(
  tool: string,
  field: string,
  args: Readonly<Record<string, unknown>>,
): string {
  const v = args[field]
  const id = typeof v === "string" ? pyStrip(v) : ""
  if (!id) throw new MissingRequestIdentityError(tool, field)
  return `${tool}:${field}:${id}`
}
