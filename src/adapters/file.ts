// Local JSON-file ledger store for Node, Deno and Bun. The file is the Python original's layout: one JSON object
// `{request_id: row}` with indent 2, ASCII-escaped like Python's json.dumps, so either language reads the other's.

import {
  type BigIntStats,
  closeSync,
  fstatSync,
  fsyncSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeSync,
  writevSync,
} from "node:fs"
import { basename, dirname, join } from "node:path"
import process from "node:process"
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
import { parsePythonRow } from "../core/python-nan.ts"
import {
  asciiJson,
  dataPath,
  errno,
  FileLock,
  fsyncDir,
  indentedJson,
  LedgerFileCorruptError,
  openLike,
  parkIn,
  rmQuiet,
  rowTexts,
  serialize,
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
  /** The row as its indented JSON text inside the file (ASCII), once serialized. */
  frag: string | null
  /** `  "<id>": <frag>` as bytes: what a write hands to the kernel for this row, encoded once. */
  bytes: Uint8Array | null
  raw: Record<string, unknown> | null
  entry: LedgerEntry | null
}

interface PendingOp {
  readonly fn: () => { result: unknown; changed: boolean }
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
}

let tmpSeq = 0

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
  #draining = false
  /** Stat signature of the file the cache reflects; "absent" = no file; null = unknown. */
  #sig: string | null = null
  /** Open handle on the cached file's inode, so its inode number cannot be reused while we compare by it. */
  #heldFd: number | null = null
  /** The text the cached rows were read from, until the next rewrite takes the untouched rows' text from it. */
  #loadedText: string | null = null

  constructor(path: string, options: FileLedgerStorageOptions = {}) {
    this.path = dataPath(path)
    this.#lock = new FileLock(this.path, options)
    this.#fsync = options.fsync ?? true
  }

  async get(requestId: string): Promise<LedgerEntry | null> {
    this.#load()
    const slot = this.#rows.get(requestId)
    return slot ? entryOf(slot) : null
  }

  set(entry: LedgerEntry): Promise<void> {
    return this.#mutate(() => {
      const slot = this.#rows.get(entry.requestId)
      refuseStaleSet(slot ? entryOf(slot) : null, entry)
      this.#put(entry)
      return { result: undefined, changed: true }
    })
  }

  tryClaimInflight(
    entry: LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): Promise<ClaimResult> {
    return this.#mutate(() => {
      const slot = this.#rows.get(entry.requestId)
      const { result, write } = decideClaim(slot ? entryOf(slot) : null, entry, leaseTtl, now, options)
      if (write) this.#put(write)
      return { result, changed: write !== null }
    })
  }

  tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean> {
    return this.#mutate(() => {
      const slot = this.#rows.get(next.requestId)
      const ok = matchesExpectation(slot ? entryOf(slot) : null, expect)
      if (ok) this.#put(next)
      return { result: ok, changed: ok }
    })
  }

  async *list(options: ListOptions = {}): AsyncIterable<LedgerEntry> {
    this.#load()
    const prefix = options.prefix ?? ""
    const limit = options.limit ?? Number.POSITIVE_INFINITY
    const keys = [...this.#rows.keys()]
      .filter((k) => k.startsWith(prefix) && (options.cursor === undefined || k > options.cursor))
      .sort()
    const slots = keys.slice(0, Math.min(keys.length, limit)).map((k) => this.#rows.get(k) as Slot)
    for (const slot of slots) yield entryOf(slot)
  }

  async findByDispatchId(dispatchId: string): Promise<LedgerEntry[]> {
    this.#load()
    const ids = this.#byDispatch.get(dispatchId)
    if (!ids) return []
    return [...ids].flatMap((id) => {
      const s = this.#rows.get(id)
      return s ? [entryOf(s)] : []
    })
  }

  async close(): Promise<void> {
    if (this.#heldFd !== null) closeSync(this.#heldFd)
    this.#heldFd = null
    this.#sig = null
  }

  // ---- internals --------------------------------------------------------------------------------------------

  #mutate<T>(fn: () => { result: T; changed: boolean }): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ fn, resolve: resolve as (v: unknown) => void, reject })
      if (!this.#draining) void this.#drain()
    })
  }

  /**
   * Group commit: every mutation queued while the lock was awaited is applied in order, then one rewrite makes
   * them all durable. Each still decides atomically against the rows before it; none resolves before the write.
   */
  async #drain(): Promise<void> {
    this.#draining = true
    try {
      while (this.#pending.length) {
        await serialize(this.#lock.path, async () => {
          let batch: PendingOp[] = []
          try {
            await this.#lock.acquire()
          } catch (e) {
            for (const op of this.#pending.splice(0)) op.reject(e)
            return
          }
          // From here to release everything is synchronous: no other call in this process can interleave.
          try {
            if (this.#lock.takeRecovered()) this.#sweepTemps()
            batch = this.#pending.splice(0)
            this.#load()
            // Settled only after the rewrite: a caller never sees a result the file does not hold yet.
            const settle: Array<() => void> = []
            let changed = false
            for (const op of batch) {
              try {
                const r = op.fn()
                changed ||= r.changed
                settle.push(() => op.resolve(r.result))
              } catch (e) {
                settle.push(() => op.reject(e))
              }
            }
            if (changed) this.#flush()
            for (const s of settle) s()
          } catch (e) {
            this.#sig = null // the cache may hold rows the file does not: re-read next time
            for (const op of batch) op.reject(e)
          } finally {
            try {
              this.#lock.release()
            } catch {
              // Left behind, the lock file is recovered as stale (dead pid or age) by the next writer.
            }
          }
        })
      }
    } catch (e) {
      for (const op of this.#pending.splice(0)) op.reject(e)
    } finally {
      this.#draining = false
    }
  }

  /**
   * Rewrites happen only under the lock, so while we hold it any `<ledger>.tmp-*` file was left by a writer killed
   * mid-rewrite (the rename never happened; the ledger itself is intact). Checked after a recovery only.
   */
  #sweepTemps(): void {
    const prefix = `${basename(this.path)}.tmp-`
    let names: string[]
    try {
      names = readdirSync(dirname(this.path))
    } catch {
      return
    }
    for (const n of names) if (n.startsWith(prefix)) rmQuiet(join(dirname(this.path), n))
  }

  #load(): void {
    let st: BigIntStats
    try {
      st = statSync(this.path, { bigint: true })
    } catch (e) {
      if (errno(e) !== "ENOENT") throw e
      if (this.#sig !== "absent") this.#reset(new Map(), "absent", null)
      return
    }
    if (signature(st) === this.#sig) return
    let fd: number
    try {
      fd = openSync(this.path, "r")
    } catch (e) {
      if (errno(e) !== "ENOENT") throw e
      this.#load() // replaced or deleted between stat and open
      return
    }
    try {
      const sig = signature(fstatSync(fd, { bigint: true }))
      const text = readFileSync(fd, "utf8")
      this.#reset(parseLedgerFile(this.path, text), sig, fd)
      this.#loadedText = text
    } catch (e) {
      closeSync(fd)
      throw e
    }
  }

  #reset(rows: Map<string, Slot>, sig: string, fd: number | null): void {
    this.#rows = rows
    this.#loadedText = null
    this.#byDispatch = new Map()
    for (const [id, slot] of rows) {
      const kwargs = slot.raw?.kwargs as Record<string, unknown> | undefined
      const d = kwargs?.tool_call_id
      if (typeof d === "string" && d) this.#index(d, id)
    }
    this.#hold(fd, sig)
  }

  #hold(fd: number | null, sig: string): void {
    if (this.#heldFd !== null && this.#heldFd !== fd) closeSync(this.#heldFd)
    this.#heldFd = fd
    this.#sig = sig
  }

  #index(dispatchId: string, requestId: string): void {
    const set = this.#byDispatch.get(dispatchId)
    if (set) set.add(requestId)
    else this.#byDispatch.set(dispatchId, new Set([requestId]))
  }

  #put(entry: LedgerEntry): void {
    const prev = this.#rows.get(entry.requestId)
    const prevDispatch = prev ? dispatchIdOf(entryOf(prev)) : null
    // Serialized now, not at flush: later mutation of the caller's objects cannot reach the file.
    const frag = indentedJson(entryToRow(entry))
    this.#rows.set(entry.requestId, { frag, bytes: null, raw: null, entry: null })
    const d = dispatchIdOf(entry)
    if (prevDispatch && prevDispatch !== d) this.#byDispatch.get(prevDispatch)?.delete(entry.requestId)
    if (d) this.#index(d, entry.requestId)
  }

  #flush(): void {
    // Rows read from the file and not changed since are written back as their text in it, never re-serialized:
    // JSON.stringify would turn the original's `100.0` into `100`, which changes the args fingerprint the original
    // re-derives from the row. Slicing the text is also cheaper than serializing (47 MB: 135 against 200 ms).
    if (this.#loadedText !== null) {
      const kept = rowTexts(this.#loadedText)
      for (const [id, slot] of this.#rows) if (slot.frag === null) slot.frag = kept.get(id) ?? null
      this.#loadedText = null
    }
    // The file is rebuilt from each row's cached bytes with writev: only changed rows are serialized, and the
    // whole text is never joined into one string.
    const chunks: Uint8Array[] = [OPEN]
    let first = true
    for (const [id, slot] of this.#rows) {
      if (!first) chunks.push(COMMA)
      first = false
      chunks.push(bytesOf(id, slot))
    }
    chunks.push(first ? CLOSE_EMPTY : CLOSE)
    const tmp = `${this.path}.tmp-${process.pid}-${++tmpSeq}`
    const fd = openLike(tmp, this.path, 0o644)
    try {
      writeAll(fd, chunks)
      parkIn("flush-tmp")
      if (this.#fsync) fsyncSync(fd)
      if (!this.#lock.held()) throw new LedgerError(`lost ${this.#lock.path} (paused too long): retry`)
      renameSync(tmp, this.path)
    } catch (e) {
      closeSync(fd)
      rmQuiet(tmp) // never created or already renamed
      throw e
    }
    if (this.#fsync) fsyncDir(dirname(this.path))
    this.#hold(fd, signature(fstatSync(fd, { bigint: true })))
  }
}

const encoder = new TextEncoder()
const OPEN = encoder.encode("{\n")
const COMMA = encoder.encode(",\n")
const CLOSE = encoder.encode("\n}")
const CLOSE_EMPTY = encoder.encode("}")
/** Linux's IOV_MAX. */
const IOV_MAX = 1024

/** writev in IOV_MAX batches, finishing any short write byte-exact. */
function writeAll(fd: number, chunks: Uint8Array[]): void {
  for (let i = 0; i < chunks.length; i += IOV_MAX) {
    const batch = chunks.slice(i, i + IOV_MAX)
    let want = 0
    for (const c of batch) want += c.byteLength
    let done = writevSync(fd, batch)
    if (done === want) continue
    let rest = new Uint8Array(want)
    let off = 0
    for (const c of batch) {
      rest.set(c, off)
      off += c.byteLength
    }
    rest = rest.subarray(done)
    while (rest.byteLength > 0) {
      done = writeSync(fd, rest)
      rest = rest.subarray(done)
    }
  }
}

function bytesOf(id: string, slot: Slot): Uint8Array {
  if (slot.bytes === null) slot.bytes = encoder.encode(`  ${asciiJson(JSON.stringify(id))}: ${fragOf(slot)}`)
  return slot.bytes
}

function fragOf(slot: Slot): string {
  if (slot.frag === null) slot.frag = indentedJson(slot.raw as Record<string, unknown>)
  return slot.frag
}

function entryOf(slot: Slot): LedgerEntry {
  if (slot.entry === null) {
    if (slot.raw === null) slot.raw = JSON.parse(slot.frag as string) as Record<string, unknown>
    slot.entry = Object.freeze(entryFromRow(slot.raw))
  }
  return slot.entry
}

/** Parses a ledger file strictly: anything but an object of rows is corruption, never "empty". */
function parseLedgerFile(path: string, text: string): Map<string, Slot> {
  let data: unknown
  try {
    data = parsePythonRow(text)
  } catch (e) {
    throw new LedgerFileCorruptError(
      path,
      text.trim() === "" ? "the file is empty" : `not valid JSON (${(e as Error).message})`,
    )
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new LedgerFileCorruptError(
      path,
      `the top-level value is ${data === null ? "null" : Array.isArray(data) ? "an array" : typeof data}, not an object of rows`,
    )
  }
  const rows = new Map<string, Slot>()
  for (const [id, raw] of Object.entries(data as Record<string, unknown>)) {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      throw new LedgerFileCorruptError(path, `row '${id}' is not an object`)
    }
    const r = raw as Record<string, unknown>
    if (typeof r.request_id !== "string" || typeof r.tool !== "string" || typeof r.status !== "string") {
      throw new LedgerFileCorruptError(
        path,
        `row '${id}': ledger row needs string request_id, tool and status`,
      )
    }
    rows.set(id, { frag: null, bytes: null, raw: r, entry: null })
  }
  return rows
}
