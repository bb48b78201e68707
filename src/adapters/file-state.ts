// StateFlush snapshots in the Python original's FileStateFlushStorage layout: one JSON object `{run_id: snapshot}`
// (indent 2), rewritten whole under the ledger file store's cross-process lock.

import { LedgerError, LedgerStorageUnavailableError } from "../adapter-kit.ts"
import { defineOwn } from "../core/own.ts"
import { parseSnapshot, type StateFlushStore, type StateSnapshot } from "../core/state/snapshot.ts"
import { LedgerFileCorruptError, type LockedFileOptions } from "./file-kit.ts"
import { LockedFile } from "./file-locked.ts"

export type FileStateFlushStoreOptions = LockedFileOptions

export class FileStateFlushStore implements StateFlushStore {
  readonly kind = "file"
  readonly #file: LockedFile

  constructor(path: string, options: FileStateFlushStoreOptions = {}) {
    this.#file = new LockedFile(path, options)
  }

  get path(): string {
    return this.#file.path
  }

  load(runId: string): Promise<StateSnapshot | null> {
    return this.#guard("load", async () => {
      const all = this.#file.readDict()
      if (!Object.hasOwn(all, runId)) return null
      const s = parseSnapshot(all[runId])
      if (!s) throw new LedgerFileCorruptError(this.path, `snapshot '${runId}' is not a state snapshot`)
      return s
    })
  }

  save(snapshot: StateSnapshot): Promise<void> {
    return this.#guard("save", () =>
      this.#file.run(() => {
        const all = this.#file.readDict()
        defineOwn(all, snapshot.run_id, snapshot)
        this.#file.writeDict(all)
      }),
    )
  }

  /**
   * A filesystem failure (EACCES, EISDIR, EIO) is the store being down, typed as every store's outage is; the fs
   * error, whose message may name the lock or temporary file, is only the cause.
   */
  async #guard<T>(op: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (e) {
      if (e instanceof LedgerError) throw e
      throw new LedgerStorageUnavailableError(
        `state store ${this.path} unavailable during ${op} (${Object(e).code ?? Object(e).name}): make it a readable, writable file, then retry`,
        { cause: e },
      )
    }
  }
}
