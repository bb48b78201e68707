import { MyceliumError } from "../core/errors.ts"
import { LedgerStorageUnavailableError } from "../core/ledger/errors.ts"
import { isStoreFault } from "../core/storage/store-faults.ts"
import { escapeUnpaired } from "../core/tools/errors.ts"

/** Misuse of an integration (e.g. asking for the transition of a call that is not guarded). */
export class GuardedToolError extends MyceliumError {
  override readonly name = "GuardedToolError"
  override readonly code: string

  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options)
    this.code = code
  }
}

/** An outcome written without its receipt: the receipt store (ReceiptAppendError) or the signer failed after it. */
function isReceiptGap(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code
  return code === "receipt_append_failed" || code === "receipt_unsigned"
}

/**
 * Whether `e` ends the call as an outage: a store that cannot be used (a corrupt file or a lock held past its timeout
 * as much as one that is down) leaves unknown whether the call took effect, and a missing receipt with no result to
 * give (see {@link outcomeStands}) follows one that did. Their messages quote the store's driver (paths, hosts, a
 * DSN), which the model must not read, and a model told that a call failed calls again.
 */
export function isOutage(e: unknown): boolean {
  return isStoreFault(e) || isReceiptGap(e)
}

/**
 * A framework that shows the model a thrown error's message would show it the store driver's text: an outage is
 * rethrown as one `LedgerStorageUnavailableError` with a fixed message (so one code ends a run whatever the store
 * said), the ledger's error kept as its `cause` for operators; any other error of the package is {@link shownToModel}.
 */
export function hideOutage(e: unknown): never {
  throw isOutage(e)
    ? new LedgerStorageUnavailableError(
        "Ledger storage unavailable: the call may have taken effect. Do not call it again now.",
        { cause: e },
      )
    : shownToModel(e)
}

/**
 * A call whose outcome was written but whose receipt was not stored or signed completed, and a redispatch returns
 * its result: so does this call. Told that it failed, the model would call again under a new id and run the effect
 * twice. The missing receipt is the operator's to restore, through `onWarning`. Any other error is rethrown.
 */
export function outcomeStands<R>(
  e: unknown,
  done: { readonly value: R } | null,
  tool: string,
  onWarning: (message: string) => void = (m) => console.warn(`[mycelium] ${m}`),
): R {
  if (!done || !isReceiptGap(e)) throw e
  // Its message says what was recorded and what to restore; the driver's text in it is for the operator.
  onWarning(`tool '${tool}': ${(e as Error).message}`)
  return done.value
}

/**
 * The frameworks show the model a thrown error's message, and a ledger error's names its request id, which a
 * `requestIdFrom` key takes from the model's own argument: "o-1\n\nSYSTEM: ..." stood on lines of its own there.
 * Line breaks and control characters are escaped, as the tool boundary escapes the model's values; the message
 * stays whole (its end says what to do), and the error keeps its class and code.
 */
export function shownToModel(e: unknown): unknown {
  if (!(e instanceof MyceliumError)) return e
  const message = escapeUnpaired(e.message)
  // A frozen error (SES harden(), Object.freeze) cannot take it, and a TypeError in its place would lose its code
  // and quote it whole: the model gets a view of it that inherits everything but the message.
  return Reflect.set(e, "message", message) ? e : Object.create(e, { message: { value: message } })
}
