// Local JSON-file ledger store for Node, Deno and Bun. The file is the Python original's layout: one JSON object
// `{request_id: row}` with indent 2, ASCII-escaped like Python's json.dumps, so either language reads the other's.

import {
  type BigIntStats,
  closeSync,
  fstatSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
  writevSync,
} from "node:fs"
import { hostname } from "node:os"
import { basename, dirname, join, resolve } from "node:path"
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

export interface FileLedgerStorageOptions {
  /** Seconds to wait for the cross-process lock before failing. Default 10. */
  readonly lockTimeout?: number
  /**
   * Seconds after which a lock whose holder cannot be proven alive is taken over. Default 30. A holder on this
   * host whose pid is gone is taken over at once.
   */
  readonly staleLockAfter?: number
  /** fsync the file and its directory on every write (default true). Off trades crash safety for speed. */
  readonly fsync?: boolean
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

const HOST = hostname()
let tmpSeq = 0

/** One writer per file in this process; other processes are kept out by the lock file. */
const queues = new Map<string, Promise<void>>()

function serialize<T>(key: string, fn: () => Promise<T>): Promise<T> {
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

const errno = (e: unknown): string | undefined => (e as { code?: string } | null)?.code

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** Python's json.dumps escapes every non-ASCII character; doing the same keeps the file readable in any locale. */
function asciiJson(text: string): string {
  return text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
}

function signature(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`
}

function fsyncDir(dir: string): void {
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

function rmQuiet(path: string): void {
  try {
    unlinkSync(path)
  } catch {
    // gone already
  }
}

/** Test-only: `MYCELIUM_TEST_LOCK_PARK=<window>` parks this process (blocks it for good) inside that lock window. */
function parkWindow(): string | null {
  try {
    return process.env.MYCELIUM_TEST_LOCK_PARK ?? null
  } catch {
    return null // Deno without --allow-env
  }
}
const PARK = parkWindow()

function parkIn(window: string): void {
  if (PARK !== window) return
  writeSync(2, `PARKED ${window} ${process.pid}\n`)
  // Synchronous and forever: the parent SIGKILLs us here, mid-window, with nothing left to run.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)
}

/** What a lock or gc marker file holds: who created it. */
interface HolderRecord {
  readonly pid: number | null
  readonly host: string | null
  readonly at: number | null
  readonly token: string | null
}

interface SeenFile {
  readonly path: string
  readonly content: string
  readonly ino: number
  readonly mtimeMs: number
  readonly holder: HolderRecord
}

/** Tokens become file names (`<lock>.gc-<token>`), so only a safe alphabet is used from a file's content. */
const SAFE_TOKEN = /^[A-Za-z0-9_-]{1,80}$/

function parseHolder(content: string): HolderRecord {
  let info: { pid?: unknown; host?: unknown; at?: unknown; token?: unknown } = {}
  try {
    const v: unknown = JSON.parse(content)
    if (v && typeof v === "object") info = v as typeof info
  } catch {
    // Foreign or truncated (a power loss before the record reached the disk): judged by age alone.
  }
  return {
    pid: typeof info.pid === "number" ? info.pid : null,
    host: typeof info.host === "string" ? info.host : null,
    at: typeof info.at === "number" ? info.at : null,
    token: typeof info.token === "string" && SAFE_TOKEN.test(info.token) ? info.token : null,
  }
}

function newToken(): string {
  const rand = new Uint32Array(2)
  globalThis.crypto.getRandomValues(rand)
  return `${process.pid}-${Date.now().toString(36)}-${rand[0]?.toString(36)}${rand[1]?.toString(36)}`
}

/**
 * A cross-process lock file that works on any local filesystem without native code, and that a SIGKILL at any
 * instant cannot wedge: the file never exists without its holder's record.
 *
 * - Acquire writes `{pid, host, at, token}` to a private temp file and link()s it to the lock path. link() fails
 *   with EEXIST if the lock is held (the O_EXCL of a file that appears complete), so a holder killed at any point
 *   leaves either no lock or a lock naming it.
 * - A lock whose holder is this host's dead pid is taken over at once; a holder on another host (or an unreadable
 *   record) only once older than `staleLockAfter`.
 * - Removing a stale lock needs the `<lock>.gc-<token>` marker of exactly that holder, created the same way, so
 *   two recoverers cannot both delete (one of them deleting a lock that was re-created meanwhile). A recoverer
 *   killed inside that window leaves a marker naming it, which is recovered by the same rule, one level up.
 * - Temp files left by a process killed before its link are swept by the next recovery.
 */
class FileLock {
  readonly path: string
  readonly #dir: string
  readonly #base: string
  readonly #timeoutMs: number
  readonly #staleMs: number
  #token: string | null = null
  #swept = false
  /** A dead writer may have left things behind since the owner of this lock last looked. */
  #recovered = true

  constructor(path: string, timeoutMs: number, staleMs: number) {
    this.path = path
    this.#dir = dirname(path)
    this.#base = basename(path)
    this.#timeoutMs = timeoutMs
    this.#staleMs = staleMs
  }

  async acquire(): Promise<void> {
    if (!this.#swept) {
      this.#swept = true
      this.#sweep()
    }
    const deadline = Date.now() + this.#timeoutMs
    let delay = 1
    for (;;) {
      if (this.#tryCreate()) return
      const seen = this.#read(this.path)
      if (seen && this.#isStale(seen) && this.#reap(seen, 0)) {
        this.#recovered = true
        this.#sweep()
        if (this.#tryCreate()) return
      }
      if (Date.now() > deadline) throw new LedgerFileLockTimeoutError(this.path, this.#timeoutMs / 1000)
      await sleep(delay * (0.5 + Math.random()))
      delay = Math.min(delay * 2, 16)
    }
  }

  /** Whether a dead holder was recovered (or this is the first acquire) since the last call. */
  takeRecovered(): boolean {
    const r = this.#recovered
    this.#recovered = false
    return r
  }

  release(): void {
    const token = this.#token
    this.#token = null
    if (!token) return
    // Only remove our own lock: if we were presumed dead and replaced, the file is someone else's now.
    if (this.#read(this.path)?.holder.token === token) {
      try {
        unlinkSync(this.path)
      } catch {
        // already gone
      }
    }
  }

  /** Publishes a complete holder record at `target`; false if the file exists. */
  #link(target: string, window: string): string | null {
    const token = newToken()
    const tmp = join(this.#dir, `${this.#base}.tmp-${token}`)
    try {
      writeFileSync(tmp, JSON.stringify({ pid: process.pid, host: HOST, token, at: Date.now() }), {
        flag: "wx",
      })
    } catch (e) {
      if (errno(e) !== "ENOENT") throw e
      mkdirSync(this.#dir, { recursive: true })
      return this.#link(target, window)
    }
    parkIn(`${window}-tmp`)
    let linked = false
    try {
      linkSync(tmp, target)
      linked = true
    } catch (e) {
      // ENOENT: a sweeper removed our temp file (it judged us dead); try again on the next round.
      if (errno(e) !== "EEXIST" && errno(e) !== "ENOENT") throw e
    } finally {
      if (linked) parkIn(`${window}-linked`)
      rmQuiet(tmp)
    }
    return linked ? token : null
  }

  #tryCreate(): boolean {
    const token = this.#link(this.path, "lock")
    if (token === null) return false
    this.#token = token
    parkIn("lock-held")
    return true
  }

  #read(path: string): SeenFile | null {
    try {
      const st = statSync(path)
      const content = readFileSync(path, "utf8")
      return { path, content, ino: st.ino, mtimeMs: st.mtimeMs, holder: parseHolder(content) }
    } catch {
      return null
    }
  }

  #isStale(f: SeenFile): boolean {
    const h = f.holder
    if (h.host === HOST && h.pid !== null && !pidAlive(h.pid)) return true
    return Date.now() - (h.at ?? f.mtimeMs) > this.#staleMs
  }

  /**
   * Removes `seen` (a stale lock or marker) if it is still the very file judged, holding the marker named for
   * it. Returns whether the file is gone. `depth` bounds the chain of dead recoverers followed.
   */
  #reap(seen: SeenFile, depth: number): boolean {
    const marker = `${this.path}.gc-${seen.holder.token ?? `ino${seen.ino}`}`
    let mine = this.#link(marker, "gc")
    if (mine === null) {
      // Another recoverer holds this marker, or died holding it.
      const m = this.#read(marker)
      if (!m || !this.#isStale(m) || depth >= 4 || !this.#reap(m, depth + 1)) return false
      mine = this.#link(marker, "gc")
      if (mine === null) return false
    }
    try {
      parkIn("gc-held")
      const now = this.#read(seen.path)
      if (!now) return true
      const same = seen.holder.token !== null ? now.holder.token === seen.holder.token : now.ino === seen.ino
      if (!same || now.content !== seen.content) return false
      unlinkSync(seen.path)
      return true
    } finally {
      if (this.#read(marker)?.holder.token === mine) unlinkSync(marker)
    }
  }

  /**
   * Deletes temp files of dead writers, and dead recoverers' markers whose target is gone: tokens are never
   * reused, so such a marker can match nothing and is litter.
   */
  #sweep(): void {
    let names: string[]
    try {
      names = readdirSync(this.#dir).filter((n) => n.startsWith(`${this.#base}.`))
    } catch {
      return
    }
    const lock = this.#read(this.path)
    const files = names.map((n) => this.#read(join(this.#dir, n)))
    // Targets still present: the lock and every marker, by token (or inode for an unreadable lock).
    const present = new Set<string>()
    if (lock) present.add(lock.holder.token ?? `ino${lock.ino}`)
    for (const f of files) if (f?.holder.token) present.add(f.holder.token)
    names.forEach((name, i) => {
      const f = files[i]
      const rest = name.slice(this.#base.length + 1)
      if (!f || !this.#isStale(f)) return
      if (rest.startsWith("tmp-") || (rest.startsWith("gc-") && !present.has(rest.slice(3)))) rmQuiet(f.path)
    })
  }
}

/**
 * A ledger in one local JSON file. Writes hold a cross-process lock file (`<path>.lock.ts`, not the original's
 * flock sidecar: Node has no flock), re-read the file only if another process replaced it, rewrite it whole
 * (temp file, fsync, rename, fsync dir), and serialize only the rows that changed. Reads take no lock: a
 * rename is atomic, so a reader sees the old or the new file, never half of one.
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

  constructor(path: string, options: FileLedgerStorageOptions = {}) {
    this.path = resolve(path)
    this.#lock = new FileLock(
      `${this.path}.lock.ts`,
      (options.lockTimeout ?? 10) * 1000,
      (options.staleLockAfter ?? 30) * 1000,
    )
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
    return [...ids].map((id) => this.#rows.get(id)).flatMap((s) => (s ? [entryOf(s)] : []))
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
            const results: unknown[] = []
            const failed = new Map<PendingOp, unknown>()
            let changed = false
            for (const op of batch) {
              try {
                const r = op.fn()
                results.push(r.result)
                changed ||= r.changed
              } catch (e) {
                results.push(undefined)
                failed.set(op, e)
              }
            }
            if (changed) this.#flush()
            batch.forEach((op, i) => {
              if (failed.has(op)) op.reject(failed.get(op))
              else op.resolve(results[i])
            })
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
      const rows = parseLedgerFile(this.path, readFileSync(fd, "utf8"))
      this.#reset(rows, sig, fd)
    } catch (e) {
      closeSync(fd)
      throw e
    }
  }

  #reset(rows: Map<string, Slot>, sig: string, fd: number | null): void {
    this.#rows = rows
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
    const frag = rowFragment(entryToRow(entry))
    this.#rows.set(entry.requestId, { frag, bytes: null, raw: null, entry: null })
    const d = dispatchIdOf(entry)
    if (prevDispatch && prevDispatch !== d) this.#byDispatch.get(prevDispatch)?.delete(entry.requestId)
    if (d) this.#index(d, entry.requestId)
  }

  #flush(): void {
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
    const fd = openSync(tmp, "w", 0o644)
    try {
      writeAll(fd, chunks)
      parkIn("flush-tmp")
      if (this.#fsync) fsyncSync(fd)
      renameSync(tmp, this.path)
    } catch (e) {
      closeSync(fd)
      try {
        unlinkSync(tmp)
      } catch {
        // never created or already renamed
      }
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

function rowFragment(row: Record<string, unknown>): string {
  return asciiJson(JSON.stringify(row, null, 2)).replaceAll("\n", "\n  ")
}

function fragOf(slot: Slot): string {
  if (slot.frag === null) slot.frag = rowFragment(slot.raw as Record<string, unknown>)
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
    data = JSON.parse(text)
  } catch (e) {
    throw new LedgerFileCorruptError(
      path,
      text.trim() === "" ? "the file is empty" : `not valid JSON (${(e as Error).message})`,
    )
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new LedgerFileCorruptError(
      path,
      `the top-level value is ${Array.isArray(data) ? "an array" : String(data === null ? "null" : typeof data)}, not an object of rows`,
    )
  }
  const rows = new Map<string, Slot>()
  for (const [id, raw] of Object.entries(data as Record<string, unknown>)) {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      throw new LedgerFileCorruptError(path, `row '${id}' is not an object`)
    }
    const r = raw as Record<string, unknown>
    if (typeof r.request_id !== "string" || typeof r.tool !== "string" || typeof r.status !== "string") {
      throw new LedgerFileCorruptError(path, `row '${id}' lacks a string request_id, tool or status`)
    }
    rows.set(id, { frag: null, bytes: null, raw: r, entry: null })
  }
  return rows
}
