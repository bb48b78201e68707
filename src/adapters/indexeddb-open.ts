// Opening an IndexedDB database with a limit, for the ledger store and the guard stores. An open waits while another
// connection holds the database against a version change, and forever if that connection never closes.
import { LedgerStorageUnavailableError } from "../core/ledger/errors.ts"
import { requestTimeoutOption } from "../core/storage/request-timeout.ts"

/**
 * The checked `blockedTimeout` option: seconds, default 10 (time for a connection that closes on `versionchange` to
 * finish its transaction, and for a first open on a slow device), or null for no limit.
 */
export function blockedTimeoutOption(value: number | null | undefined): number | null {
  return value === undefined ? 10 : requestTimeoutOption(value, "blockedTimeout")
}

/**
 * The connection `req` opens. An open waits while another connection holds the database against a version change
 * (`blocked`), or behind an upgrade or deletion queued before it that waits so: forever if that connection never
 * closes. Past `wait` seconds that is an outage, named by `what` (the database, and why it opens). The request cannot
 * be cancelled, so a connection it opens later is closed at once: left open, with no versionchange handler, it would
 * block every later upgrade.
 */
export function opened(req: IDBOpenDBRequest, wait: number | null, what: string): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    let late = false
    const timer =
      wait === null
        ? undefined
        : setTimeout(() => {
            late = true
            reject(
              new LedgerStorageUnavailableError(
                `IndexedDB database ${what} did not open within ${wait} s (blockedTimeout): another connection holds ` +
                  "it against an upgrade or deletion. Close that connection, or have it close on versionchange " +
                  "(db.onversionchange = () => db.close()); the next call retries",
              ),
            )
          }, wait * 1000)
    req.addEventListener("success", () => {
      clearTimeout(timer)
      if (late) req.result.close()
      else resolve(req.result)
    })
    req.addEventListener("error", () => {
      clearTimeout(timer)
      reject(req.error)
    })
  })
}

/**
 * Opens `name` at its current version and, when `ready` finds a store of this adapter missing, again one version up
 * so `upgrade` adds it: several stores (the ledger's, the guard stores') share one database, and a database created
 * by other code is extended rather than rejected. `adds` names what the upgrade adds. The connection closes itself
 * when another connection upgrades the database (else it would block that upgrade) and calls `onGone`.
 */
export async function openWithStores(
  factory: IDBFactory | undefined,
  name: string,
  wait: number | null,
  adds: string,
  ready: (db: IDBDatabase) => boolean,
  upgrade: (db: IDBDatabase, tx: IDBTransaction | null) => void,
  onGone: () => void,
): Promise<IDBDatabase> {
  if (!factory)
    throw new LedgerStorageUnavailableError(
      "IndexedDB is not available in this runtime: pass `indexedDB` (e.g. from fake-indexeddb) or use another store",
    )
  let version: number | undefined
  let seen = 0
  // A race lost to a connection that upgraded the database (it added its own store) costs nothing, so any number of
  // stores can open at once; only an open without such progress uses one of the 5 misses.
  for (let misses = 0; misses < 5; ) {
    const req = version === undefined ? factory.open(name) : factory.open(name, version)
    let ours = false
    req.addEventListener("upgradeneeded", () => {
      ours = true
      upgrade(req.result, req.transaction)
    })
    let db: IDBDatabase
    try {
      db = await opened(req, wait, `'${name}'${version ? ` (version ${version}, to add ${adds})` : ""}`)
    } catch (e) {
      // Another connection upgraded past the version asked for: start again from the current one.
      if ((e as Error | null)?.name !== "VersionError") throw e
      version = undefined
      continue
    }
    if (ready(db)) {
      db.addEventListener("versionchange", () => {
        db.close()
        onGone()
      })
      db.addEventListener("close", onGone)
      return db
    }
    if (ours || db.version <= seen) misses++
    seen = db.version
    version = seen + 1
    db.close()
  }
  throw new LedgerStorageUnavailableError(
    `could not add ${adds} to IndexedDB database '${name}': 5 opens made no progress (the upgrade did not add it); retry later`,
  )
}
