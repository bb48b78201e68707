// The task, receipt and state file stores' one JSON file under the file lock (file-kit.ts): read it whole, rewrite
// it atomically (temp file, fsync, rename, fsync dir), append to it durably. The ledger file store writes its own.
import {
  appendFileSync,
  closeSync,
  fsyncSync,
  mkdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeSync,
} from "node:fs"
import { dirname } from "node:path"
import { LedgerStorageUnavailableError } from "../adapter-kit.ts"
import {
  asciiJson,
  dataPath,
  errno,
  FileLock,
  fsyncDirOf,
  indentedJson,
  LedgerFileCorruptError,
  type LockedFileOptions,
  newToken,
  openLike,
  parseDict,
  rmQuiet,
  rowTexts,
} from "./file-kit.ts"
import { openRegular } from "./file-open.ts"

/** openRegular(), typed: what is not a regular file is LedgerFileCorruptError, as in the ledger file store. */
export function openFile(path: string, append?: boolean): number {
  const fd = openRegular(path, append)
  if (fd === null) throw new LedgerFileCorruptError(path, "not a regular file")
  return fd
}

/** What readDict() read for each dict it returned, so writeDict() can tell untouched entries from changed ones. */
const loaded = new WeakMap<object, { readonly text: string; readonly values: Record<string, unknown> }>()

function dictText(dict: Record<string, unknown>): string {
  const was = loaded.get(dict)
  const kept = was ? rowTexts(was.text) : null
  const items: string[] = []
  for (const [k, v] of Object.entries(dict)) {
    if (v === undefined) continue
    const same = was !== undefined && Object.hasOwn(was.values, k) && was.values[k] === v
    items.push(`  ${asciiJson(JSON.stringify(k))}: ${(same && kept?.get(k)) || indentedJson(v)}`)
  }
  return items.length ? `{\n${items.join(",\n")}\n}` : "{}"
}

/** One file guarded like the ledger file: in-process queue plus an O_EXCL lock file `<path>.lock.ts`. */
export class LockedFile {
  readonly path: string
  readonly fsync: boolean
  readonly #lock: FileLock

  constructor(path: string, options: LockedFileOptions = {}) {
    this.path = dataPath(path)
    this.fsync = options.fsync ?? true
    this.#lock = new FileLock(this.path, options)
  }

  /** Runs `fn` holding the lock: no other process or call of this one touches the file meanwhile. */
  run<T>(fn: () => Promise<T> | T): Promise<T> {
    return this.#lock.run(fn)
  }

  /** The file's text, or null when it does not exist. */
  read(path = this.path): string | null {
    return (this.bytes(path) as Buffer | null)?.toString("utf8") ?? null
  }

  /** The file's bytes (a Buffer; typed as its base class, so the published types need no Node typings), or null. */
  bytes(path = this.path): Uint8Array | null {
    let fd: number
    try {
      fd = openFile(path)
    } catch (e) {
      if (errno(e) === "ENOENT") return null
      throw e
    }
    try {
      return readFileSync(fd)
    } finally {
      closeSync(fd)
    }
  }

  /** Size in bytes, 0 when absent. */
  size(path = this.path): number {
    try {
      return statSync(path).size
    } catch (e) {
      if ((e as { code?: string }).code === "ENOENT") return 0
      throw e
    }
  }

  /**
   * A JSON object file (`{key: value}`); absent is empty (without a prototype: `dict["constructor"]` is no row),
   * anything else that is not an object is corrupt: an empty file too (a truncation; every writer, the original's
   * included, writes at least `{}`). Python's bare NaN and Infinity are read as json.loads reads them.
   */
  readDict(path = this.path): Record<string, unknown> {
    const text = this.read(path)
    if (text === null) return Object.create(null)
    const parsed = parseDict(path, text)
    loaded.set(parsed, { text, values: { ...parsed } })
    return parsed
  }

  /**
   * Replaces the file with `{key: value}` as Python's json.dumps(indent=2) writes it (ASCII escapes). Entries of a
   * readDict() result that still hold the value read are written back as their text in the file: re-serialized,
   * the original's `100.0` would come back as `100` and its NaN as null.
   */
  writeDict(dict: Record<string, unknown>, path = this.path): void {
    this.writeDicts([dict, path])
  }

  /**
   * Replaces each file in turn after one lock check: a lock lost between two renames would leave half a write
   * landed and the caller told nothing was.
   */
  writeDicts(...files: [Record<string, unknown>, string][]): void {
    this.#replaceAll(files.map(([dict, path]) => [dictText(dict), path]))
  }

  replace(text: string, path = this.path): void {
    this.#replaceAll([[text, path]])
  }

  /** Each `[text, path]` written to a temporary file first, then all renamed into place if the lock is still held. */
  #replaceAll(files: [string, string][]): void {
    const staged: [string, string][] = []
    try {
      for (const [text, path] of files) {
        mkdirSync(dirname(path), { recursive: true })
        // Random and created exclusively (openLike): the old `<path>.<pid>.<n>.tmp` could be predicted, and a FIFO
        // planted there hung this synchronous open, a symlink took the rows to its target.
        const tmp = `${path}.${newToken()}.tmp`
        staged.push([tmp, path])
        const fd = openLike(tmp, path)
        try {
          writeSync(fd, text)
          if (this.fsync) fsyncSync(fd)
        } finally {
          closeSync(fd)
        }
      }
      this.#stillHeld()
    } catch (e) {
      for (const [tmp] of staged) rmQuiet(tmp)
      throw e
    }
    for (const [tmp, path] of staged) {
      renameSync(tmp, path)
      if (this.fsync) fsyncDirOf(path)
    }
  }

  /**
   * A writer paused past staleLockAfter was presumed dead and replaced: its rewrite, built on what it read before,
   * would erase what its successor wrote since, and its append would fork a receipt chain its successor extended
   * (as the ledger file store checks in its flush).
   */
  #stillHeld(): void {
    if (!this.#lock.held())
      throw new LedgerStorageUnavailableError(
        `lost the lock ${this.#lock.path} to another writer (this one was paused past staleLockAfter); ` +
          "nothing was written: retry",
      )
  }

  append(text: string, path = this.path): void {
    this.#stillHeld()
    mkdirSync(dirname(path), { recursive: true })
    const fd = openFile(path, true)
    try {
      appendFileSync(fd, text)
      if (this.fsync) fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
  }
}
