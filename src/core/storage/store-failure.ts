// One rule for every ledger's store: a failure that is not already a ledger decision is an outage, reported as
// the ledger's own "unavailable" error with the original as its cause, so callers meet one typed error whatever
// the driver threw (a fetch TypeError, a driver timeout, a reply of the wrong shape).
import { LedgerError } from "../ledger/errors.ts"

type Unavailable = new (message: string, options: { cause: unknown }) => Error

export function storeFailure(what: string, op: string, e: unknown, Unavailable: Unavailable): Error {
  if (e instanceof LedgerError) return e
  const name = e instanceof Error ? e.name : typeof e
  const msg = e instanceof Error ? e.message : String(e)
  return new Unavailable(`${what} unavailable during ${op}: ${name}: ${msg}`, { cause: e })
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
