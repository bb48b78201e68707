// Local JSON-file ledger store for Node, Deno and Bun. The file is the Python original's layout: one JSON object
// `{request_id: row}` with indent 2, ASCII-escaped like Python's json.dumps, so either language reads the other's.

import {
  type BigIntStats,
  closeSync,
  fstatSync,
  fsyncSync,
  readFileSync,
  renameSync,
  statSync,
  writevSync,
} from "node:fs"
import {
  type ClaimOptions,
  type ClaimResult,
  decideClaim,
  dispatchIdOf,
  entryFromRow,
  entryToRow,
  type LedgerEntry,
  LedgerError,
  type LedgerStorage,
  type ListOptions,
  matchesExpectation,
  refuseStaleSet,
  type TransitionExpectation,
} from "../adapter-kit.ts"
import { isObject } from "../core/is-object.ts"
import {
  asciiJson,
  dataPath,
  errno,
  FileLock,
  fsyncDirOf,
  indentedJson,
  LedgerFileCorruptError,
  lockWindows,
  newToken,
  openLike,
  openToRead,
  parseDict,
  rmQuiet,
  rowTexts,
} from "./file-kit.ts"

// The file family's errors live with its shared lock and I/O (file-kit.ts); this entry is where users import them.
export { FlockUnavailableError, LedgerFileCorruptError, LedgerFileLockTimeoutError } from "./file-kit.ts"

export interface FileLedgerStorageOptions {
  /** Seconds to wait for the cross-process lock before failing. Default 10. */
  readonly lockTimeout?: number
  /**
   * Seconds after which a lock whose holder cannot be proven alive is taken over. Default 30. A holder on this
   * host (same hostname and PID namespace) whose pid is gone is taken over at once.
   */
  readonly staleLockAfter?: number
  /** fsync the file and its directory on every write (default true). Off trades crash safety for speed. */
  readonly fsync?: boolean
  /**
   * Also hold the original's lock, `flock` on `<path>.lock`, around every write (default false). Set it when Python
   * workers use the same file while this process runs: without it the two lock different files and a write of one
   * can undo the other's. Takes the `flock` command (util-linux, on every Debian and most Linux systems; macOS:
   * `brew install flock`; Deno: `--allow-run`), a child process per locked write.
   */
  readonly pythonLock?: boolean
}

interface Slot {
  /** A row this process wrote: its indented JSON text (ASCII). Null for a row read, whose text is the file's. */
  frag: string | null
  /** `  "<id>": <row text>` as bytes: what a write hands to the kernel for this row, encoded once. */
  bytes: Uint8Array | null
  raw: Record<string, unknown> | null
  entry: LedgerEntry | null
}

interface PendingOp {
  readonly fn: () => unknown
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
}

function signature(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`
}

/**
 * A ledger in one local JSON file. Writes hold a cross-process lock file (`<path>.lock.ts`; the original's flock
 * sidecar too with `pythonLock`, through the flock command: Node has no flock), re-read the file only if another
 * process replaced it, rewrite it whole (temp file, fsync, rename, fsync dir), and serialize only the rows that
 * changed. Reads take no lock: a rename is atomic, so a reader sees the old or the new file, never half of one.
 */
export class FileLedgerStorage implements LedgerStorage {
  readonly kind = "file"
  readonly path: string
  readonly #lock: FileLock
  readonly #fsync: boolean
  #rows = new Map<string, Slot>()
  #byDispatch = new Map<string, Set<string>>()
  #pending: PendingOp[] = []
  /** Whether the batch being applied changed a row, so the file must be rewritten. */
  #dirty = false
  /** Stat signature of the file the cache reflects; "absent" = no file; null = unknown. */
  #sig: string | null = null
  /** Open handle on the cached file's inode, so its inode number cannot be reused while we compare by it. */
  #heldFd: number | null = null
  /** The text the cached rows were read from, until the next rewrite takes the untouched rows' text from it. */
  #loadedText: string | null = null

  constructor(path: string, options: FileLedgerStorageOptions = {}) {
    this.path = dataPath(path)
    this.#lock = new FileLock(this.path, options, true)
    this.#fsync = options.fsync ?? true
  }

  async get(requestId: string): Promise<LedgerEntry | null> {
    this.#load()
    return this.#entry(requestId)
  }

  set(entry: LedgerEntry): Promise<void> {
    return this.#mutate(() => {
      refuseStaleSet(this.#entry(entry.requestId), entry)
      this.#put(entry)
    })
  }

  tryClaimInflight(
    entry: LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): Promise<ClaimResult> {
    return this.#mutate(() => {
      const { result, write } = decideClaim(this.#entry(entry.requestId), entry, leaseTtl, now, options)
      if (write) this.#put(write)
      return result
    })
  }

  tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean> {
    return this.#mutate(() => {
      const ok = matchesExpectation(this.#entry(next.requestId), expect)
      if (ok) this.#put(next)
      return ok
    })
  }

  async *list(options: ListOptions = {}): AsyncIterable<LedgerEntry> {
    this.#load()
    const prefix = options.prefix ?? ""
    const keys = [...this.#rows.keys()]
      .filter((k) => k.startsWith(prefix) && (options.cursor === undefined || k > options.cursor))
      .sort()
    const slots = keys.slice(0, options.limit ?? keys.length).map((k) => this.#rows.get(k) as Slot)
    for (const slot of slots) yield entryOf(slot)
  }

  async findByDispatchId(dispatchId: string): Promise<LedgerEntry[]> {
    this.#load()
    const ids = this.#byDispatch.get(dispatchId)
    if (!ids) return []
    return [...ids].flatMap((id) => this.#entry(id) ?? [])
  }

  async close(): Promise<void> {
    if (this.#heldFd !== null) closeSync(this.#heldFd)
    this.#heldFd = null
    this.#sig = null
  }

  // ---- internals --------------------------------------------------------------------------------------------

  #entry(requestId: string): LedgerEntry | null {
    const slot = this.#rows.get(requestId)
    return slot ? entryOf(slot) : null
  }

  #mutate<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // The first call of a batch queues its commit; the calls made until that commit holds the lock join it.
      if (this.#pending.push({ fn, resolve: resolve as (v: unknown) => void, reject }) === 1)
        void this.#commit()
    })
  }

  /**
   * Group commit: every mutation queued while the lock was awaited is applied in order, then one rewrite makes
   * them all durable. Each still decides atomically against the rows before it; none resolves before the write.
   */
  async #commit(): Promise<void> {
    let batch: PendingOp[] = []
    try {
      const settle = await this.#lock.run(() => {
        // From here to release everything is synchronous: no other call in this process can interleave.
        batch = this.#pending.splice(0)
        this.#load()
        this.#dirty = false
        const settle = batch.map((op) => {
          try {
            const result = op.fn()
            return () => op.resolve(result)
          } catch (e) {
            return () => op.reject(e)
          }
        })
        if (this.#dirty) this.#flush()
        return settle
      })
      // Settled only after the rewrite: a caller never sees a result the file does not hold yet.
      for (const s of settle) s()
    } catch (e) {
      this.#sig = null // the cache may hold rows the file does not: re-read next time
      // None taken yet: the lock was not acquired, and every call queued for it fails with it.
      for (const op of batch.length ? batch : this.#pending.splice(0)) op.reject(e)
    }
  }

  #load(): void {
    let st: BigIntStats
    try {
      st = statSync(this.path, { bigint: true })
    } catch (e) {
      if (errno(e) !== "ENOENT") throw e
      if (this.#sig !== "absent") this.#reset(null, "absent", null)
      return
    }
    if (signature(st) === this.#sig) return
    let fd: number
    try {
      // Judged on what was opened, not by the stat above: the path may have been swapped in between.
      fd = openToRead(this.path)
    } catch (e) {
      if (errno(e) !== "ENOENT") throw e
      this.#load() // replaced or deleted between stat and open
      return
    }
    try {
      const sig = signature(fstatSync(fd, { bigint: true }))
      const text = readFileSync(fd, "utf8")
      this.#reset(text, sig, fd)
    } catch (e) {
      closeSync(fd)
      throw e
    }
  }

  /**
   * The cache made from the file's `text` (null: no file), which `fd` holds open. The file is checked whole first:
   * anything but an object of rows is corruption, never "empty", and leaves the cache as it was.
   */
  #reset(text: string | null, sig: string, fd: number | null): void {
    const rows = new Map<string, Slot>()
    const byDispatch = new Map<string, Set<string>>()
    for (const [id, raw] of Object.entries(text === null ? {} : parseDict(this.path, text))) {
      if (
        !isObject(raw) ||
        typeof raw.request_id !== "string" ||
        typeof raw.tool !== "string" ||
        typeof raw.status !== "string"
      ) {
        throw new LedgerFileCorruptError(
          this.path,
          `row '${id}': ledger row needs string request_id, tool and status`,
        )
      }
      rows.set(id, { frag: null, bytes: null, raw, entry: null })
      const d = (raw.kwargs as Record<string, unknown> | null | undefined)?.tool_call_id
      if (typeof d === "string" && d) index(byDispatch, d, id)
    }
    this.#rows = rows
    this.#byDispatch = byDispatch
    this.#loadedText = text
    this.#hold(fd, sig)
  }

  #hold(fd: number | null, sig: string): void {
    if (this.#heldFd !== null && this.#heldFd !== fd) closeSync(this.#heldFd)
    this.#heldFd = fd
    this.#sig = sig
  }

  #put(entry: LedgerEntry): void {
    const prev = this.#entry(entry.requestId)
    const prevDispatch = prev && dispatchIdOf(prev)
    // Serialized now, not at flush: later mutation of the caller's objects cannot reach the file.
    const frag = indentedJson(entryToRow(entry))
    this.#rows.set(entry.requestId, { frag, bytes: null, raw: null, entry: null })
    this.#dirty = true
    const d = dispatchIdOf(entry)
    if (prevDispatch && prevDispatch !== d) this.#byDispatch.get(prevDispatch)?.delete(entry.requestId)
    if (d) index(this.#byDispatch, d, entry.requestId)
  }

  #flush(): void {
    // Rows read from the file and not changed since are written back as their text in it, never re-serialized:
    // JSON.stringify would turn the original's `100.0` into `100`, which changes the args fingerprint the original
    // re-derives from the row. Slicing the text is also cheaper than serializing (47 MB: 135 against 200 ms).
    const kept = this.#loadedText === null ? null : rowTexts(this.#loadedText)
    this.#loadedText = null
    // The file is rebuilt from each row's cached bytes with writev: only changed rows are serialized, and the
    // whole text is never joined into one string. Never `{}`: a flush follows a put, and rows are never removed.
    const chunks: Uint8Array[] = []
    for (const [id, slot] of this.#rows) {
      slot.bytes ??= encoder.encode(
        `  ${asciiJson(JSON.stringify(id))}: ${slot.frag ?? kept?.get(id) ?? indentedJson(slot.raw)}`,
      )
      chunks.push(chunks.length ? COMMA : OPEN, slot.bytes)
    }
    chunks.push(CLOSE)
    const tmp = `${this.path}.tmp-${newToken()}`
    const fd = openLike(tmp, this.path, 0o644)
    try {
      writeAll(fd, chunks)
      lockWindows.park?.("flush-tmp")
      if (this.#fsync) fsyncSync(fd)
      if (!this.#lock.held()) throw new LedgerError(`lost ${this.#lock.path} (paused too long): retry`)
      renameSync(tmp, this.path)
    } catch (e) {
      closeSync(fd)
      rmQuiet(tmp) // never created or already renamed
      throw e
    }
    if (this.#fsync) fsyncDirOf(this.path)
    this.#hold(fd, signature(fstatSync(fd, { bigint: true })))
  }
}

const encoder = new TextEncoder()
const OPEN = encoder.encode("{\n")
const COMMA = encoder.encode(",\n")
const CLOSE = encoder.encode("\n}")
/** Linux's IOV_MAX. */
const IOV_MAX = 1024

/** writev in IOV_MAX batches; after a short write, the next batch starts where it stopped, byte-exact. */
function writeAll(fd: number, chunks: Uint8Array[]): void {
  let i = 0
  while (i < chunks.length) {
    let done = writevSync(fd, chunks.slice(i, i + IOV_MAX))
    // Past the chunks written whole, then cut the front off the one written in part.
    for (let c = chunks[i]; c && done >= c.byteLength; c = chunks[++i]) done -= c.byteLength
    if (done > 0) chunks[i] = (chunks[i] as Uint8Array).subarray(done)
  }
}

function entryOf(slot: Slot): LedgerEntry {
  if (slot.entry === null) {
    if (slot.raw === null) slot.raw = JSON.parse(slot.frag as string) as Record<string, unknown>
    slot.entry = Object.freeze(entryFromRow(slot.raw))
  }
  return slot.entry
}

function index(byDispatch: Map<string, Set<string>>, dispatchId: string, requestId: string): void {
  const set = byDispatch.get(dispatchId)
  if (set) set.add(requestId)
  else byDispatch.set(dispatchId, new Set([requestId]))
}
