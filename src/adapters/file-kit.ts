// Shared by the file-backed task, receipt and state stores: the ledger file store's cross-process lock around a
// whole-file read-modify-write, with atomic replace (temp file, fsync, rename, fsync dir) or a durable append.
import {
  appendFileSync,
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  writeSync,
} from "node:fs"
import { dirname, resolve } from "node:path"
import process from "node:process"
import { asciiJson, FileLock, LedgerFileCorruptError, serialize } from "./file.ts"

export interface LockedFileOptions {
  /** Seconds to wait for the cross-process lock. Default 10. */
  readonly lockTimeout?: number
  /** Seconds after which a lock whose holder cannot be proven alive is taken over. Default 30. */
  readonly staleLockAfter?: number
  /** fsync every write (default true). */
  readonly fsync?: boolean
}

let tmpSeq = 0

function fsyncDir(dir: string): void {
  let fd: number | undefined
  try {
    fd = openSync(dir, "r")
    fsyncSync(fd)
  } catch {
    // Not supported everywhere (Windows); the rename stays atomic.
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** One file guarded like the ledger file: in-process queue plus an O_EXCL lock file `<path>.lock.ts`. */
export class LockedFile {
  readonly path: string
  readonly fsync: boolean
  readonly #lock: FileLock

  constructor(path: string, options: LockedFileOptions = {}) {
    this.path = resolve(path)
    this.fsync = options.fsync ?? true
    this.#lock = new FileLock(
      `${this.path}.lock.ts`,
      (options.lockTimeout ?? 10) * 1000,
      (options.staleLockAfter ?? 30) * 1000,
    )
  }

  /** Runs `fn` holding the lock: no other process or call of this one touches the file meanwhile. */
  run<T>(fn: () => Promise<T> | T): Promise<T> {
    return serialize(this.#lock.path, async () => {
      await this.#lock.acquire()
      try {
        return await fn()
      } finally {
        try {
          this.#lock.release()
        } catch {
          // Recovered as stale by the next writer.
        }
      }
    })
  }

  /** The file's text, or null when it does not exist. */
  read(path = this.path): string | null {
    try {
      return readFileSync(path, "utf8")
    } catch (e) {
      if ((e as { code?: string }).code === "ENOENT") return null
      throw e
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

  /** A JSON object file (`{key: value}`); absent is empty, anything else that is not an object is corrupt. */
  readDict(): Record<string, unknown> {
    const text = this.read()
    if (text === null || text.trim() === "") return {}
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (e) {
      throw new LedgerFileCorruptError(this.path, `not JSON (${(e as Error).message})`)
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw new LedgerFileCorruptError(this.path, "not a JSON object")
    return parsed as Record<string, unknown>
  }

  /** Replaces the file with `{key: value}` as Python's json.dumps(indent=2) writes it (ASCII escapes). */
  writeDict(dict: Record<string, unknown>, path = this.path): void {
    this.replace(`${asciiJson(JSON.stringify(dict, null, 2))}`, path)
  }

  replace(text: string, path = this.path): void {
    mkdirSync(dirname(path), { recursive: true })
    const tmp = `${path}.${process.pid}.${++tmpSeq}.tmp`
    const fd = openSync(tmp, "w")
    try {
      writeSync(fd, text)
      if (this.fsync) fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(tmp, path)
    if (this.fsync) fsyncDir(dirname(path))
  }

  append(text: string, path = this.path): void {
    mkdirSync(dirname(path), { recursive: true })
    if (!this.fsync) {
      appendFileSync(path, text)
      return
    }
    const fd = openSync(path, "a")
    try {
      writeSync(fd, text)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
  }
}
