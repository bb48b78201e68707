// StateFlush snapshots in the Python original's FileStateFlushStorage layout: one JSON object `{run_id: snapshot}`
// (indent 2), rewritten whole under the ledger file store's cross-process lock.

import { defineOwn } from "../core/own.ts"
import { parseSnapshot, type StateFlushStore, type StateSnapshot } from "../core/state/snapshot.ts"
import { LedgerFileCorruptError, LockedFile, type LockedFileOptions } from "./file-kit.ts"

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

  async load(runId: string): Promise<StateSnapshot | null> {
    const all = this.#file.readDict()
    if (!Object.hasOwn(all, runId)) return null
    const s = parseSnapshot(all[runId])
    if (!s) throw new LedgerFileCorruptError(this.path, `snapshot '${runId}' is not a state snapshot`)
    return s
  }

  save(snapshot: StateSnapshot): Promise<void> {
    return this.#file.run(() => {
      const all = this.#file.readDict()
      defineOwn(all, snapshot.run_id, snapshot)
      this.#file.writeDict(all)
    })
  }
}
