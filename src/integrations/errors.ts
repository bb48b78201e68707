import { MyceliumError } from "../core/errors.ts"
import { LedgerStorageUnavailableError } from "../core/ledger/errors.ts"
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

/**
 * A framework that shows the model a thrown error's message would show it the store driver's text (file paths,
 * hosts): a ledger outage is rethrown with a fixed message, the driver's error kept as its `cause` for operators;
 * any other error of the package is {@link shownToModel}.
 */
export function hideOutage(e: unknown): never {
  throw (e as { code?: unknown } | null)?.code === "ledger_storage_unavailable"
    ? new LedgerStorageUnavailableError(
        "Ledger storage unavailable: the call may have taken effect. Do not call it again now.",
        { cause: e },
      )
    : shownToModel(e)
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
