// Builds, signs and appends receipts. The ledgers call `sign` before their completion write (so the receipt id
// rides on that write) and `append` after it.
import type { JsonValue, ReceiptDraft, ReceiptHook } from "../ledger/index.ts"
import { toJsonValue } from "../ledger/model/canonical.ts"
import { type ChainSealer, sealLink } from "./chain.ts"
import { AuditReceiptError } from "./errors.ts"
import {
  type AuditReceiptRecord,
  newReceiptId,
  type Receipt,
  receiptPayloadText,
  receiptShapeProblem,
} from "./record.ts"
import type { ReceiptSigner } from "./signer.ts"
import type { ReceiptStore } from "./store.ts"

export interface ReceiptOptions {
  readonly signer: ReceiptSigner
  readonly store: ReceiptStore
  /** The original's `agent_id` (its `transition.agent_id`). */
  readonly agentId: string
  /** Chain name; default `agentId`. `false` appends unchained receipts, exactly as the original does. */
  readonly chain?: string | false
  /** Epoch seconds; default `Date.now() / 1000`. */
  readonly now?: () => number
}

/** What a receipt says; `timestamp` defaults to the emitter's clock. */
export type ReceiptInit = ReceiptDraft

/** Signs and stores receipts; pass one to `ActionLedger`/`TaskLedger` as `receipts` to emit them automatically. */
export class ReceiptEmitter implements ReceiptHook {
  readonly signer: ReceiptSigner
  readonly store: ReceiptStore
  readonly agentId: string
  readonly chain: string | null
  readonly #now: () => number
  /** Payload text of records this emitter signed, so chaining them does not serialize them again. */
  readonly #texts = new WeakMap<AuditReceiptRecord, string>()

  constructor(options: ReceiptOptions) {
    if (!options?.signer || !options.store)
      throw new AuditReceiptError(
        "audit receipts need both a signer and a store (receipts: { signer, store, agentId })",
      )
    if (!options.agentId)
      throw new AuditReceiptError("audit receipts need an agentId (the original's agent_id)")
    // "" would read as "no chain" below: receipts the caller asked to chain would be stored unchained.
    if (options.chain === "")
      throw new AuditReceiptError("the receipt chain needs a name (or chain: false for unchained receipts)")
    this.signer = options.signer
    this.store = options.store
    this.agentId = options.agentId
    this.chain = options.chain === false ? null : (options.chain ?? options.agentId)
    this.#now = options.now ?? (() => Date.now() / 1000)
  }

  /** A signed record, not yet stored. Its `receipt_id` can be written to a row before `append`. */
  async sign(init: ReceiptInit): Promise<AuditReceiptRecord> {
    if (init.status !== "completed" && init.status !== "failed")
      throw new AuditReceiptError(`receipt status must be completed or failed, got '${String(init.status)}'`)
    let inputs: AuditReceiptRecord["inputs"]
    let outputs: JsonValue
    try {
      // Copied once: what is signed is what is stored, whatever getters in the draft return later.
      inputs = {
        args: toJsonValue(init.args ?? []) as JsonValue[],
        kwargs: toJsonValue(init.kwargs ?? {}) as Record<string, JsonValue>,
      }
      outputs = toJsonValue(init.outputs ?? null)
    } catch (error) {
      throw new AuditReceiptError(
        `receipt inputs and outputs must be JSON (no cycles, nothing deeper than the stack): ${String(error)}`,
      )
    }
    const unsigned = {
      receipt_id: newReceiptId(),
      agent_id: this.agentId,
      action: init.action,
      action_kind: init.actionKind,
      request_id: init.requestId,
      inputs,
      outputs,
      status: init.status,
      timestamp: init.timestamp ?? this.#now(),
      error: init.error ?? null,
    }
    // A draft of the wrong shape (from untyped callers) would be signed and stored yet could never verify.
    const problem = receiptShapeProblem({ ...unsigned, signature: "" })
    if (problem !== null) throw new AuditReceiptError(`cannot sign this receipt: ${problem}`)
    if (!Number.isFinite(unsigned.timestamp))
      throw new AuditReceiptError("cannot sign this receipt: 'timestamp' is not finite epoch seconds")
    const text = receiptPayloadText(unsigned)
    const signature = await this.signer.sign(text)
    // A signer of the caller's own (a KMS client) answering bytes, an object or nothing: the receipt was stored, the
    // call succeeded, and the receipt could never verify. Refused as any signer failure is.
    if (typeof signature !== "string" || signature === "")
      throw new AuditReceiptError(`the receipt signer returned ${typeof signature}, not a signature string`)
    const record = { ...unsigned, signature }
    this.#texts.set(record, text)
    return record
  }

  /** Stores a signed record, chained to the previous receipt of this emitter's chain. */
  append(record: AuditReceiptRecord): Promise<Receipt> {
    const chain = this.chain
    const sealer: ChainSealer | undefined = chain
      ? { ledger: chain, seal: (tail) => sealLink(this.signer, chain, tail, record, this.#texts.get(record)) }
      : undefined
    return this.store.append(record, sealer)
  }

  async emit(init: ReceiptInit): Promise<Receipt> {
    return await this.append(await this.sign(init))
  }
}
