// One rule for every ledger's store: a failure that is not already a ledger decision is an outage, reported as
// the ledger's own "unavailable" error with the original as its cause, so callers meet one typed error whatever
// the driver threw (a fetch TypeError, a driver timeout, a reply of the wrong shape).
import { LedgerError } from "../ledger/errors.ts"

type Unavailable = new (message: string, options: { cause: unknown }) => Error

export function storeFailure(what: string, op: string, e: unknown, Unavailable: Unavailable): Error {
  if (e instanceof LedgerError) return e
  // Not String(e) alone: a rejection that is no Error (the Neon driver's WebSocket event on a socket reset) would
  // read "[object Object]". Its constructor and message, code or type name it instead.
  const o = Object(e)
  return new Unavailable(
    `${what} unavailable during ${op}: ${o.name ?? o.constructor?.name}: ${o.message ?? o.code ?? o.type ?? e}`,
    { cause: e },
  )
}

/** A store operation whose failure, thrown or rejected, is reported by {@link storeFailure}. */
export function guardStoreCall<T>(
  what: string,
  op: string,
  fn: () => Promise<T>,
  Unavailable: Unavailable,
): Promise<T> {
  let p: Promise<T>
  try {
    p = fn()
  } catch (e) {
    return Promise.reject(storeFailure(what, op, e, Unavailable))
  }
  return p.then(undefined, (e: unknown) => {
    throw storeFailure(what, op, e, Unavailable)
  })
}
