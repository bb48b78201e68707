// Which errors say a store cannot be used. A module of its own: the ledger and the stores never read it, and a
// module-level Set is kept by every bundle that imports its module.

/**
 * The codes of a store that cannot be used: down, or there but unusable until an operator acts (a corrupt file, a
 * lock held past its timeout, a store's answer that is none of its own). Their messages carry the backend's own text
 * (paths, hosts, the first bytes of a damaged file), and whether a call's outcome was recorded is unknown: the edge
 * API keeps that text for its log, and the framework integrations fail closed without showing it to the model.
 */
export const STORE_FAULT_CODES: ReadonlySet<string> = new Set([
  "ledger_storage_unavailable",
  // The root class bare: only a store throws it (the file store that lost its lock mid-write, a flock that failed),
  // with its path in the message. Read as a conflict, it was a 409 quoting that path, not a retryable outage.
  "ledger_error",
  "ledger_file_corrupt",
  "ledger_file_lock_timeout",
  "receipt_store_corrupt",
  "upstash_unexpected_reply",
])

/** Whether `e` carries one of the {@link STORE_FAULT_CODES}: by code, so a remote ledger's error counts too. */
export function isStoreFault(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code
  return typeof code === "string" && STORE_FAULT_CODES.has(code)
}
