// The file family's shared machinery, package-internal (not an entry): the cross-process lock file and in-process
// queue the ledger file store (file.ts) and the locked JSON file of the other file stores (file-locked.ts) take around
// a whole-file read-modify-write, Python-style ASCII JSON, atomic replace helpers, and the errors every file store
// throws.
import { spawn } from "node:child_process"
import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs"
import { hostname } from "node:os"
import { basename, dirname, join, resolve } from "node:path"
import process from "node:process"
import { LedgerError } from "../adapter-kit.ts"
import { InvalidOptionError } from "../core/errors.ts"
import { isObject } from "../core/is-object.ts"
import { LedgerConfigError } from "../core/ledger/errors.ts"
import { parsePythonRow } from "../core/python-nan.ts"
import { resolveLinks } from "../node/links.ts"

/** The ledger file exists but is not a JSON object of rows. Nothing was read or written; repair or restore it. */
export class LedgerFileCorruptError extends LedgerError {
  override readonly name = "LedgerFileCorruptError"
  override readonly code = "ledger_file_corrupt"
  readonly path: string
  constructor(path: string, detail: string) {
    super(`Ledger file ${path} is corrupt: ${detail}. Restore it from a backup or repair the JSON.`)
    this.path = path
  }
}

/** Another process held the ledger file's lock for longer than `lockTimeout`. Nothing was written. */
export class LedgerFileLockTimeoutError extends LedgerError {
  override readonly name = "LedgerFileLockTimeoutError"
  override readonly code = "ledger_file_lock_timeout"
  readonly lockPath: string
  constructor(lockPath: string, timeout: number) {
    // One text for both locks: a flock (`pythonLock`) is never left over, and deleting its file changes nothing.
    super(
      `Another process held the lock ${lockPath} for ${timeout}s: retry; if no process uses the ledger, delete it`,
    )
    this.lockPath = lockPath
  }
}

/** `pythonLock` needs the `flock` command (util-linux), which is not on PATH. Nothing was written. */
export class FlockUnavailableError extends LedgerError {
  override readonly name = "FlockUnavailableError"
  override readonly code = "flock_unavailable"
}

/**
 * The original locks its file stores with flock(2) on `<path>.lock`. Node has no flock, so a store that shares its
 * file with running Python workers (`pythonLock`) holds that lock through util-linux's `flock` command: a child that
 * takes the lock and runs `cat` until this process kills it. If this process dies first, its pipe to `cat` closes,
 * `cat` and then flock exit, and the lock is released: never left behind for anyone to clean up. Resolves to the
 * function that releases it.
 */
function holdFlock(path: string, timeout: number): Promise<() => void> {
  mkdirSync(dirname(path), { recursive: true })
  // flock opens the file before its timeout starts: a FIFO there kept the call waiting for good.
  if (statSync(path, { throwIfNoEntry: false })?.isFile() === false)
    throw new LedgerFileCorruptError(path, "not a regular file")
  const child = spawn("flock", ["-xow", String(timeout), path, "cat"], {
    stdio: ["pipe", "pipe", "ignore"],
  })
  // A promise settles once: an exit or error after the lock was held (our own kill) rejects nothing.
  return new Promise((resolve, reject) => {
    child.once("error", (e: NodeJS.ErrnoException) =>
      reject(
        e.code === "ENOENT"
          ? new FlockUnavailableError("pythonLock needs the flock command on PATH (util-linux)", { cause: e })
          : e,
      ),
    )
    // `cat` echoes the byte written below only once flock holds the lock and has started it.
    child.stdout.once("data", () => {
      // Released at once, not when this process's event loop next runs: closing stdin only takes effect then, and a
      // caller that blocks right after (a synchronous spawn of a Python worker that wants this very lock) would
      // deadlock. With -o the lock is flock's own, so killing flock frees it; closing stdin ends `cat`.
      resolve(() => {
        child.kill("SIGKILL")
        child.stdin.destroy()
      })
    })
    child.once("exit", (code) =>
      reject(
        code === 1
          ? new LedgerFileLockTimeoutError(path, timeout)
          : new LedgerError(`flock ${path}: exit ${code}`),
      ),
    )
    child.stdin.on("error", () => {})
    child.stdin.write("\n")
  })
}

const HOST = hostname()

/**
 * This process's PID namespace ("pid:[4026531836]"), null where there are none (not Linux). Containers of one pod
 * share a hostname and a volume but not their pids: a pid is judged only by a process of the same host and
 * namespace. On Linux an unreadable one (Deno grants /proc/self/ns to --allow-all only) is a name no other process
 * writes: two such processes in two namespaces read as one and each took the other's live lock by its pid.
 */
const PIDNS = ((): string | null => {
  try {
    return readlinkSync("/proc/self/ns/pid")
  } catch {
    return process.platform === "linux" ? `unknown:${newToken()}` : null
  }
})()

/**
 * A data path the store locks and renames over: its symlinks resolved, else a rename would replace a link with a
 * plain file (the target stops changing) and two names of one ledger would take two locks. Link by link, not with
 * realpath, which fails on a target not created yet (a shared volume before the first write).
 */
export function dataPath(path: string): string {
  const win = process.platform === "win32"
  // Not resolve() first on POSIX: it drops `link/..` as text, where the kernel climbs from the link's target
  // (app/data -> vol/deep: app/data/../l.json is vol/l.json). Windows reads `..` as text itself.
  const p = win ? resolve(path) : path
  try {
    // As the kernel reads it: on POSIX `\` and `c:` are characters of a name, not a separator and a drive. A relative
    // path starts at the working directory, which has no links to follow (Deno's --allow-read=. may not lstat above).
    const r = resolveLinks(p, win, win ? "" : process.cwd())
    // Without links the text is what the kernel reads: normalized, so one file has one name in this process too.
    return win || r !== p ? r : resolve(p)
  } catch (e) {
    // Left unresolved, a link (ENAMETOOLONG past PATH_MAX, EACCES) would give one ledger two names and two locks.
    throw new LedgerConfigError(
      `${path}: cannot follow its links (${errno(e) ?? (e as Error).name}): check its links and directories`,
    )
  }
}

/**
 * Opens `path` to read (O_RDONLY is 0) without waiting on a FIFO, and refuses what was opened (not a stat before: the
 * path may be swapped in between) unless it is a regular file: a FIFO's open waited forever and /dev/zero's read
 * filled memory, in synchronous calls no timeout reaches. openRegular() does more; importing it costs the file entry
 * more than its size budget holds.
 */
export function openToRead(path: string): number {
  const fd = openSync(path, constants.O_NONBLOCK)
  if (fstatSync(fd).isFile()) return fd
  closeSync(fd)
  throw new LedgerFileCorruptError(path, "not a regular file")
}

/** Opens `tmp` to replace `path` with `path`'s permission bits: a ledger made private (0600) stays private. */
export function openLike(tmp: string, path: string, mode = 0o666): number {
  let bits: number | undefined
  try {
    bits = statSync(path).mode & 0o777
  } catch {
    // new file: the default, narrowed by the umask
  }
  // Exclusive: never opened through a FIFO (a wait for good) or a symlink (a write to its target) left at the name.
  const fd = openSync(tmp, "wx", bits ?? mode)
  if (bits !== undefined) fchmodSync(fd, bits) // the umask narrowed what openSync created
  return fd
}

/** One writer per file in this process; other processes are kept out by the lock file. */
const queues = new Map<string, Promise<void>>()

export const errno = (e: unknown): string | undefined => (e as { code?: string } | null)?.code

/** Python's json.dumps escapes every non-ASCII character; doing the same keeps the file readable in any locale. */
export function asciiJson(text: string): string {
  return text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
}

/** A value as it sits inside `{key: value}` written with indent 2: ASCII-escaped, nested lines indented twice. */
export function indentedJson(value: unknown): string {
  return asciiJson(JSON.stringify(value, null, 2)).replaceAll("\n", "\n  ")
}

/**
 * Each entry's text, by key, in a JSON object file that parsed. The last string before a value's `{` or `[` at depth 1
 * is its key; a scalar entry is not in the map, so the caller serializes it instead.
 */
export function rowTexts(text: string): Map<string, string> {
  const out = new Map<string, string>()
  let depth = 0
  let id = ""
  let start = 0
  // Strings are skipped with indexOf, not matched by a regex: V8 backtracks per escape and a string of millions of
  // them overflows its stack.
  const re = /["[{\]}]/g
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const c = m[0]
    if (c === '"') {
      // Its end: the next quote after an even run of backslashes.
      let end = m.index
      let n = 1
      while (n % 2 === 1) {
        end = text.indexOf('"', end + 1)
        n = 0
        while (text[end - 1 - n] === "\\") n++
      }
      if (end < 0) break
      if (depth === 1) id = text.slice(m.index, end + 1)
      re.lastIndex = end + 1
    } else if (c === "{" || c === "[") {
      if (++depth === 2) start = m.index
    } else if (--depth === 1) out.set(JSON.parse(id) as string, text.slice(start, m.index + 1))
  }
  return out
}

/**
 * A file store's text as json.loads reads it (Python's bare NaN and Infinity too). Anything but an object is corrupt,
 * never "empty": an empty file too (a truncation; every writer, the original's included, writes at least `{}`).
 */
export function parseDict(path: string, text: string): Record<string, unknown> {
  let parsed: unknown
  try {
    parsed = parsePythonRow(text)
  } catch (e) {
    throw new LedgerFileCorruptError(
      path,
      text.trim() === "" ? "the file is empty" : `not JSON (${(e as Error).message})`,
    )
  }
  if (!isObject(parsed)) throw new LedgerFileCorruptError(path, "not a JSON object")
  return parsed
}

/** Makes a rename of `path` durable: fsyncs the directory that holds it. */
export function fsyncDirOf(path: string): void {
  let fd: number | undefined
  try {
    fd = openSync(dirname(path), "r")
    fsyncSync(fd)
  } catch {
    // Directories cannot be opened or synced on some platforms (Windows); the rename is still atomic there.
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

export function rmQuiet(path: string): void {
  try {
    unlinkSync(path)
  } catch {
    // gone already
  }
}

/**
 * Test-only: the kill tests' children set `park` (test/adapters/file-lock-park.ts) to block for good inside one
 * window of the lock protocol, where their parent SIGKILLs them: `tmp` and `linked` with the lock or gc marker being
 * linked, `lock-held`, `gc-held` and `flush-tmp`. Set by the tests, so no application bundle reads the environment.
 */
export const lockWindows: { park?: (window: string, target?: string) => void } = {}

/** What a lock or gc marker file holds: who created it. */
interface HolderRecord {
  readonly pid: number | null
  readonly host: string | null
  readonly at: number | null
  readonly token: string | null
  readonly pidns: string | null
}

interface SeenFile {
  readonly path: string
  readonly content: string
  /** What its gc marker is named after: its holder's token, its inode (`ino<n>`) when the record has none. */
  readonly key: string
  readonly mtimeMs: number
  readonly holder: HolderRecord
}

/** Tokens become file names (`<lock>.gc-<token>`), so only a safe alphabet is used from a file's content. */
const SAFE_TOKEN = /^[A-Za-z0-9_-]{1,80}$/

function parseHolder(content: string): HolderRecord {
  let info: Record<string, unknown> = {}
  try {
    const v: unknown = JSON.parse(content)
    if (isObject(v)) info = v
  } catch {
    // Foreign or truncated (a power loss before the record reached the disk): judged by age alone.
  }
  return {
    pid: typeof info.pid === "number" ? info.pid : null,
    host: typeof info.host === "string" ? info.host : null,
    at: typeof info.at === "number" ? info.at : null,
    token: typeof info.token === "string" && SAFE_TOKEN.test(info.token) ? info.token : null,
    pidns: typeof info.pidns === "string" ? info.pidns : null,
  }
}

/** A holder's unique name: random, so no process, on this host or another, ever makes the same one. */
export function newToken(): string {
  return crypto.randomUUID()
}

/**
 * A lock option in seconds, checked: NaN or "x" waited on a held lock forever. Inline, not secondsProblem(): its
 * message helpers cost the file entry more than its budget holds.
 */
function lockSeconds(
  o: LockedFileOptions,
  name: "lockTimeout" | "staleLockAfter",
  fallback: number,
  min: number,
) {
  const v = o[name] ?? fallback
  if (!(Number.isFinite(v) && v >= min))
    throw new InvalidOptionError(`${name} must be a finite number of seconds >= ${min}, got ${String(v)}`)
  return v
}

/**
 * A cross-process lock file that works on any local filesystem without native code, and that a SIGKILL at any
 * instant cannot wedge: the file never exists without its holder's record.
 *
 * - Acquire writes `{pid, host, pidns, at, token}` to a private temp file and link()s it to the lock path. link() fails
 *   with EEXIST if the lock is held (the O_EXCL of a file that appears complete), so a holder killed at any point
 *   leaves either no lock or a lock naming it.
 * - A lock whose holder is a dead pid of this host and PID namespace is taken over at once; any other holder (or an
 *   unreadable record) only once older than `staleLockAfter`.
 * - Removing a stale lock needs the `<lock>.gc-<token>` marker of exactly that holder, created the same way, so
 *   two recoverers cannot both delete (one of them deleting a lock that was re-created meanwhile). A recoverer
 *   killed inside that window leaves a marker naming it, which is recovered by the same rule, one level up.
 * - Temp files left by a process killed before its link are swept by the next recovery, once it holds the lock.
 */
export class FileLock {
  readonly path: string
  readonly #dir: string
  readonly #base: string
  /** Seconds. */
  readonly #timeout: number
  readonly #staleMs: number
  #token: string | null = null
  /** A dead writer may have left things behind since this lock last swept (or it never has). */
  #recovered = true
  /** `<data file name>.tmp-`, where the ledger store stages its rewrites; null for stores that stage elsewhere. */
  readonly #temps: string | null

  /** The original's flock sidecar (`<data path>.lock`) to hold first, when Python workers share the file. */
  readonly #flockPath: string | null
  #unflock: (() => void) | null = null

  /**
   * Data file `path` (the lock is `<path>.lock.ts`), its store's options checked here for every file store.
   * `stagesTemps`: the store writes its rewrites to `<path>.tmp-*` first, which a holder sweeps with its own litter.
   */
  constructor(path: string, options: LockedFileOptions, stagesTemps = false) {
    this.path = `${path}.lock.ts`
    this.#temps = stagesTemps ? `${basename(path)}.tmp-` : null
    this.#dir = dirname(path)
    this.#base = basename(this.path)
    this.#timeout = lockSeconds(options, "lockTimeout", 10, 0)
    // -1 took over a live writer's lock at once (two writers: the later rename undid the other's rows); under a
    // second, a writer still fsyncing on a loaded disk.
    this.#staleMs = lockSeconds(options, "staleLockAfter", 30, 1) * 1000
    this.#flockPath = options.pythonLock ? `${path}.lock` : null
  }

  /**
   * With a flock path: the original's flock first (a Python writer holds only that one), then this lock, in that
   * order in every process, so two of ours never wait on each other crosswise.
   */
  async acquire(): Promise<void> {
    const unflock = this.#flockPath ? await holdFlock(this.#flockPath, this.#timeout) : null
    try {
      const deadline = Date.now() + this.#timeout * 1000
      let delay = 1
      while (!this.#tryCreate()) {
        const seen = this.#read(this.path)
        if (seen && this.#isStale(seen) && this.#reap(seen, 0)) {
          this.#recovered = true
          if (this.#tryCreate()) break
        }
        if (Date.now() > deadline) throw new LedgerFileLockTimeoutError(this.path, this.#timeout)
        await new Promise((r) => setTimeout(r, delay * (0.5 + Math.random())))
        delay = Math.min(delay * 2, 16)
      }
      // Held: what dead writers left can go, on this lock's first acquire and after a recovery.
      if (this.#recovered) {
        this.#recovered = false
        this.#sweep()
      }
    } catch (e) {
      unflock?.()
      throw e
    }
    this.#unflock = unflock
  }

  /** Runs `fn` holding the lock: no other process or call of this one writes the file meanwhile. */
  run<T>(fn: () => Promise<T> | T): Promise<T> {
    const result = (queues.get(this.path) ?? Promise.resolve()).then(async () => {
      try {
        // Inside: an acquire that fails after taking the lock (its sweep met a file it refuses) still releases it.
        await this.acquire()
        return await fn()
      } finally {
        try {
          this.release()
        } catch {
          // Left behind, the lock file is recovered as stale (dead pid or age) by the next writer.
        }
      }
    })
    // The queue's end: it drops the key once nothing was queued behind it.
    const tail: Promise<void> = result
      .catch(() => {})
      .then(() => {
        if (queues.get(this.path) === tail) queues.delete(this.path)
      })
    queues.set(this.path, tail)
    return result
  }

  release(): void {
    const unflock = this.#unflock
    this.#unflock = null
    try {
      // Only remove our own lock: if we were presumed dead and replaced, the file is someone else's now.
      if (this.held()) rmQuiet(this.path)
      this.#token = null
    } finally {
      unflock?.()
    }
  }

  /**
   * Whether the lock file is still this holder's. A process paused past `staleLockAfter` (SIGSTOP, a frozen VM)
   * is presumed dead and replaced; it must not then write over what its successor wrote.
   */
  held(): boolean {
    return this.#token !== null && this.#read(this.path)?.holder.token === this.#token
  }

  /** Publishes a complete holder record at `target`; false if the file exists. */
  #link(target: string): string | null {
    const token = newToken()
    const tmp = join(this.#dir, `${this.#base}.tmp-${token}`)
    try {
      writeFileSync(
        tmp,
        JSON.stringify({ pid: process.pid, host: HOST, pidns: PIDNS, token, at: Date.now() }),
        {
          flag: "wx",
        },
      )
    } catch (e) {
      if (errno(e) !== "ENOENT") throw e
      mkdirSync(this.#dir, { recursive: true })
      return this.#link(target)
    }
    lockWindows.park?.("tmp", target)
    try {
      linkSync(tmp, target)
      lockWindows.park?.("linked", target)
      return token
    } catch (e) {
      // ENOENT: a sweeper removed our temp file (it judged us dead); try again on the next round.
      if (errno(e) !== "EEXIST" && errno(e) !== "ENOENT") throw e
      return null
    } finally {
      rmQuiet(tmp)
    }
  }

  #tryCreate(): boolean {
    const token = this.#link(this.path)
    if (token === null) return false
    this.#token = token
    lockWindows.park?.("lock-held")
    return true
  }

  /** A lock or marker file, null when gone or unreadable; what is no regular file is refused (openToRead). */
  #read(path: string): SeenFile | null {
    let fd: number
    try {
      fd = openToRead(path)
    } catch (e) {
      if (e instanceof LedgerFileCorruptError) throw e
      return null
    }
    try {
      const st = fstatSync(fd)
      const content = readFileSync(fd, "utf8")
      const holder = parseHolder(content)
      return { path, content, key: holder.token ?? `ino${st.ino}`, mtimeMs: st.mtimeMs, holder }
    } finally {
      closeSync(fd)
    }
  }

  #isStale(f: SeenFile): boolean {
    const h = f.holder
    // A holder of this host and PID namespace whose pid is gone is dead (EPERM: alive, another user's).
    if (h.host === HOST && h.pidns === PIDNS && h.pid !== null)
      try {
        process.kill(h.pid, 0)
      } catch (e) {
        if (errno(e) === "ESRCH") return true
      }
    return Date.now() - (h.at ?? f.mtimeMs) > this.#staleMs
  }

  /**
   * Removes `seen` (a stale lock or marker) if it is still the very file judged, holding the marker named for
   * it. Returns whether the file is gone. `depth` bounds the chain of dead recoverers followed.
   */
  #reap(seen: SeenFile, depth: number): boolean {
    const marker = `${this.path}.gc-${seen.key}`
    let mine = this.#link(marker)
    if (mine === null) {
      // Another recoverer holds this marker, or died holding it.
      const m = this.#read(marker)
      if (!m || !this.#isStale(m) || depth >= 4 || !this.#reap(m, depth + 1)) return false
      mine = this.#link(marker)
      if (mine === null) return false
    }
    try {
      lockWindows.park?.("gc-held")
      const now = this.#read(seen.path)
      if (!now) return true
      // The very file judged: the same record (its token names one holder), the same inode when it has none.
      if (now.content !== seen.content || now.key !== seen.key) return false
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
    let all: string[]
    try {
      all = readdirSync(this.#dir)
    } catch {
      return
    }
    // Rewrites happen only under the lock, so while it is held a `<data>.tmp-*` file was left by a writer killed
    // mid-rewrite (the rename never happened; the data file itself is intact).
    const temps = this.#temps
    if (temps !== null) for (const n of all) if (n.startsWith(temps)) rmQuiet(join(this.#dir, n))
    const names = all.filter((n) => n.startsWith(`${this.#base}.`))
    const lock = this.#read(this.path)
    const files = names.map((n) => this.#read(join(this.#dir, n)))
    // Targets still present: the lock and every marker, by token (or inode for an unreadable lock).
    const present = new Set(files.map((f) => f?.holder.token))
    if (lock) present.add(lock.key)
    names.forEach((name, i) => {
      const f = files[i]
      const rest = name.slice(this.#base.length + 1)
      if (!f || !this.#isStale(f)) return
      if (rest.startsWith("tmp-") || (rest.startsWith("gc-") && !present.has(rest.slice(3)))) rmQuiet(f.path)
    })
  }
}

export interface LockedFileOptions {
  /** Seconds to wait for the cross-process lock. Default 10. */
  readonly lockTimeout?: number
  /** Seconds after which a lock whose holder cannot be proven alive is taken over. Default 30. */
  readonly staleLockAfter?: number
  /** fsync every write (default true). */
  readonly fsync?: boolean
  /** Also hold the original's flock on `<path>.lock`: see {@link FileLedgerStorageOptions.pythonLock}. */
  readonly pythonLock?: boolean
}
