// The file family's shared machinery, package-internal (not an entry): the cross-process lock file and in-process
// queue the ledger file store (file.ts) and the file task, receipt and state stores take around a whole-file
// read-modify-write, Python-style ASCII JSON, atomic replace (temp file, fsync, rename, fsync dir), durable append,
// and the two errors every file store throws.
import {
  appendFileSync,
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs"
import { hostname } from "node:os"
import { dirname, resolve } from "node:path"
import process from "node:process"
import { LedgerError } from "../adapter-kit.ts"

/** The ledger file exists but is not a JSON object of rows. Nothing was read or written; repair or restore it. */
export class LedgerFileCorruptError extends LedgerError {
  override readonly name = "LedgerFileCorruptError"
  override readonly code = "ledger_file_corrupt"
  readonly path: string
  constructor(path: string, detail: string) {
    super(
      `Ledger file ${path} is corrupt: ${detail}. It was not treated as empty (that would forget which ` +
        "actions already ran). Restore it from a backup or repair the JSON, then retry.",
    )
    this.path = path
  }
}

/** Another process held the ledger file's lock for longer than `lockTimeout`. Nothing was written. */
export class LedgerFileLockTimeoutError extends LedgerError {
  override readonly name = "LedgerFileLockTimeoutError"
  override readonly code = "ledger_file_lock_timeout"
  readonly lockPath: string
  constructor(lockPath: string, timeout: number) {
    super(
      `Timed out after ${timeout}s waiting for the ledger file lock ${lockPath}. If no process is using the ` +
        "ledger, the lock is left over from a crash on another host: delete it and retry.",
    )
    this.lockPath = lockPath
  }
}

export interface LockedFileOptions {
  /** Seconds to wait for the cross-process lock. Default 10. */
  readonly lockTimeout?: number
  /** Seconds after which a lock whose holder cannot be proven alive is taken over. Default 30. */
  readonly staleLockAfter?: number
  /** fsync every write (default true). */
  readonly fsync?: boolean
}

let tmpSeq = 0

const HOST = hostname()

/** One writer per file in this process; other processes are kept out by the lock file. */
const queues = new Map<string, Promise<void>>()

export function serialize<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const prev = queues.get(key) ?? Promise.resolve()
  const run = prev.then(fn)
  const tail = run.then(
    () => {},
    () => {},
  )
  queues.set(key, tail)
  void tail.then(() => {
    if (queues.get(key) === tail) queues.delete(key)
  })
  return run
}

export const errno = (e: unknown): string | undefined => (e as { code?: string } | null)?.code

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** Python's json.dumps escapes every non-ASCII character; doing the same keeps the file readable in any locale. */
export function asciiJson(text: string): string {
  return text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
}

export function fsyncDir(dir: string): void {
  let fd: number | undefined
  try {
    fd = openSync(dir, "r")
    fsyncSync(fd)
  } catch {
    // Directories cannot be opened or synced on some platforms (Windows); the rename is still atomic there.
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return errno(e) !== "ESRCH"
  }
}

/**
 * A lock file created with O_EXCL: works between OS processes on any local filesystem without native code.
 * A lock left by a crashed holder is recovered by pid (same host) or by age, and recoverers serialize on a
 * second file so none can delete a lock another recoverer has just re-created.
 */
export class FileLock {
  readonly path: string
  readonly #timeoutMs: number
  readonly #staleMs: number
  #token: string | null = null

  constructor(path: string, timeoutMs: number, staleMs: number) {
    this.path = path
    this.#timeoutMs = timeoutMs
    this.#staleMs = staleMs
  }

  async acquire(): Promise<void> {
    const deadline = Date.now() + this.#timeoutMs
    let delay = 1
    for (;;) {
      if (this.#tryCreate()) return
      this.#recoverIfStale()
      if (this.#tryCreate()) return
      if (Date.now() > deadline) throw new LedgerFileLockTimeoutError(this.path, this.#timeoutMs / 1000)
      await sleep(delay * (0.5 + Math.random()))
      delay = Math.min(delay * 2, 16)
    }
  }

  release(): void {
    const token = this.#token
    this.#token = null
    if (!token) return
    // Only remove our own lock: if we were presumed dead and replaced, the file is someone else's now.
    if (this.#read()?.content.includes(token)) {
      try {
        unlinkSync(this.path)
      } catch {
        // already gone
      }
    }
  }

  #tryCreate(): boolean {
    const token = `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`
    let fd: number
    try {
      fd = openSync(this.path, "wx")
    } catch (e) {
      if (errno(e) === "EEXIST") return false
      if (errno(e) !== "ENOENT") throw e
      mkdirSync(dirname(this.path), { recursive: true })
      return this.#tryCreate()
    }
    try {
      writeFileSync(fd, JSON.stringify({ pid: process.pid, host: HOST, token, at: Date.now() }))
    } finally {
      closeSync(fd)
    }
    this.#token = token
    return true
  }

  #read(): { content: string; mtimeMs: number; ino: number } | null {
    try {
      const st = statSync(this.path)
      return { content: readFileSync(this.path, "utf8"), mtimeMs: st.mtimeMs, ino: st.ino }
    } catch {
      return null
    }
  }

  #isStale(lock: { content: string; mtimeMs: number }): boolean {
    let info: { pid?: unknown; host?: unknown; at?: unknown } = {}
    try {
      info = JSON.parse(lock.content)
    } catch {
      // Being written right now, or foreign: judge by age alone.
    }
    if (info.host === HOST && typeof info.pid === "number" && !pidAlive(info.pid)) return true
    const at = typeof info.at === "number" ? info.at : lock.mtimeMs
    return Date.now() - at > this.#staleMs
  }

  #recoverIfStale(): void {
    const seen = this.#read()
    if (!seen || !this.#isStale(seen)) return
    const gc = `${this.path}.gc`
    try {
      closeSync(openSync(gc, "wx"))
    } catch {
      try {
        if (Date.now() - statSync(gc).mtimeMs > this.#staleMs) unlinkSync(gc)
      } catch {
        // gone meanwhile
      }
      return
    }
    try {
      const now = this.#read()
      if (now && now.ino === seen.ino && now.content === seen.content && this.#isStale(now))
        unlinkSync(this.path)
    } finally {
      unlinkSync(gc)
    }
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
