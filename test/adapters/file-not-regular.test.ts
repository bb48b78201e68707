// Every file store refuses a path that is not a regular file, typed and at once. On a FIFO (an application whose
// config names one) the first call hung the process for good, in a synchronous open no timeout reaches; /dev/zero
// was read until memory ran out; a directory failed with a bare EISDIR. Each store runs in a child process, bounded
// by a timeout and a memory limit, so the old behaviour fails the test instead of hanging or exhausting the runner.
import { execFileSync, spawnSync } from "node:child_process"
import { lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { openLike } from "../../src/adapters/file-kit.ts"
import { childBundles } from "../child-bundle.ts"
import { tempDirs } from "../temp-dirs.ts"

const CHILD = fileURLToPath(new URL("./file-not-regular-child.ts", import.meta.url))
const bundled = childBundles()
const freshDir = tempDirs("mycelium-not-regular-")

function fifo(path: string): string {
  execFileSync("mkfifo", [path])
  return path
}

/**
 * What each call of the child's store did at `path` (after it planted `plant`, if any: the child's header says how);
 * the child gets 20 s and 2 GB of data (heap and buffers).
 */
function outcomes(kind: string, path: string, ...plant: string[]) {
  const r = spawnSync(
    "sh",
    ["-c", 'ulimit -d 2000000 && exec "$@"', "sh", process.execPath, bundled(CHILD), kind, path, ...plant],
    { encoding: "utf8", timeout: 20_000 },
  )
  return {
    exit: r.status,
    signal: r.signal,
    // Its last line only: a crash's source excerpt confuses the runner's stack parser.
    stderr: r.stderr.trim().split("\n").at(-1),
    calls: r.stdout
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>),
  }
}

const refused = (op: string, path: string) => ({
  op,
  name: "LedgerFileCorruptError",
  code: "ledger_file_corrupt",
  message: `Ledger file ${path} is corrupt: not a regular file. Restore it from a backup or repair the JSON.`,
})

/** Each target: the path the store is given, and the one it names (a symlink is resolved by the store). */
const targets: Array<[string, () => [string, string]]> = [
  [
    "a FIFO",
    () => {
      const path = fifo(join(freshDir(), "ledger.json"))
      return [path, path]
    },
  ],
  [
    "a symlink to a FIFO",
    () => {
      const dir = freshDir()
      symlinkSync(fifo(join(dir, "pipe")), join(dir, "ledger.json"))
      return [join(dir, "ledger.json"), join(dir, "pipe")]
    },
  ],
  ["/dev/zero", () => ["/dev/zero", "/dev/zero"]],
  [
    "a directory",
    () => {
      const path = join(freshDir(), "ledger.json")
      mkdirSync(path)
      return [path, path]
    },
  ],
]

describe.each(["ledger", "tasks", "state", "receipts"])("the %s file store", (kind) => {
  it.each(targets)(
    "refuses %s with LedgerFileCorruptError, without blocking",
    { timeout: 30_000 },
    (_, make) => {
      const [given, named] = make()
      const r = outcomes(kind, given)
      expect({ exit: r.exit, signal: r.signal, calls: r.calls }, r.stderr).toEqual({
        exit: 0,
        signal: null,
        calls: [refused("read", named), refused("write", named)],
      })
    },
  )
})

it("a ledger file swapped for a FIFO after a write: the next read refuses it, never serving the cached rows", () => {
  const dir = freshDir()
  const pipe = fifo(join(dir, "pipe"))
  const r = outcomes("swapped", pipe)
  expect({ exit: r.exit, signal: r.signal, calls: r.calls }, r.stderr).toEqual({
    exit: 0,
    signal: null,
    calls: [{ op: "write", ok: true }, { op: "swap", ok: true }, refused("read", `${pipe}.json`)],
  })
}, 30_000)

// The side files a write takes: the lock file `<path>.lock.ts` (and the original's flock file `<path>.lock` with
// pythonLock), whose holder record was read with a blocking open (a FIFO hung the process, /dev/zero filled memory;
// a directory waited out lockTimeout as "another process held the lock"), and flock opened its file before its
// timeout started. Refused at once, typed, naming the file; a read takes no lock and still answers.
describe.each([
  ["ledger", ".lock.ts", "read"],
  ["flock", ".lock", "read"],
  ["tasks", ".lock.ts", "read"],
  ["state", ".lock.ts", "read"],
  ["receipts", ".lock.ts", "read"],
])("the %s file store with something else at <path>%s", (kind, suffix, read) => {
  it.each(["fifo", "zero", "dir"])(
    "%s: its write is refused with LedgerFileCorruptError at once",
    { timeout: 30_000 },
    (plant) => {
      const path = join(freshDir(), "store.json")
      const r = outcomes(kind, path, plant, suffix)
      expect({ exit: r.exit, signal: r.signal, calls: r.calls }, r.stderr).toEqual({
        exit: 0,
        signal: null,
        calls: [{ op: read, ok: true }, refused("write", path + suffix)],
      })
    },
  )
})

// A file store built on LockedFile staged each rewrite at `<file>.<pid>.<n>.tmp`, a name anyone could predict: a FIFO
// there hung the process in a synchronous open, and a symlink there took the rows to its target (then the link was
// renamed over the store file). Staging names are random now, and created exclusively.
describe.each(["fifo", "link"])("a %s at the task store's old staging names", (plant) => {
  it("is never opened: the write lands in the store file, the link's target untouched", {
    timeout: 30_000,
  }, () => {
    const dir = freshDir()
    const path = join(dir, "tasks.json")
    writeFileSync(`${path}.victim`, "untouched")
    // The first write staged the leases file (`.leases.json`), then the rows file, at sequence numbers 1 and 2.
    const r = outcomes("tasks", path, plant, ".leases.json.{pid}.1.tmp", ".{pid}.2.tmp")
    expect({ exit: r.exit, signal: r.signal, calls: r.calls }, r.stderr).toEqual({
      exit: 0,
      signal: null,
      calls: [
        { op: "read", ok: true },
        { op: "write", ok: true },
      ],
    })
    expect(readFileSync(`${path}.victim`, "utf8")).toBe("untouched")
    expect(lstatSync(path).isFile()).toBe(true)
    expect(JSON.parse(readFileSync(path, "utf8"))).toHaveProperty("t-1")
    // Nothing staged was left behind: the two planted names, the two files written, the victim.
    expect(readdirSync(dir).filter((n) => !/^tasks\.json(\.leases\.json)?\.\d+\.[12]\.tmp$/.test(n))).toEqual(
      ["tasks.json", "tasks.json.leases.json", "tasks.json.victim"],
    )
    expect(readdirSync(dir)).toHaveLength(5)
  })
})

// What is at a staging name is never opened through: a symlink planted there fails the exclusive create.
it("openLike refuses a name that exists instead of writing through it", () => {
  const dir = freshDir()
  writeFileSync(join(dir, "victim"), "untouched")
  symlinkSync(join(dir, "victim"), join(dir, "staged.tmp"))
  expect(() => openLike(join(dir, "staged.tmp"), join(dir, "store.json"))).toThrow(
    expect.objectContaining({ code: "EEXIST" }),
  )
  expect(readFileSync(join(dir, "victim"), "utf8")).toBe("untouched")
})
