// Every file store refuses a path that is not a regular file, typed and at once. On a FIFO (an application whose
// config names one) the first call hung the process for good, in a synchronous open no timeout reaches; /dev/zero
// was read until memory ran out; a directory failed with a bare EISDIR. Each store runs in a child process, bounded
// by a timeout and a memory limit, so the old behaviour fails the test instead of hanging or exhausting the runner.
import { execFileSync, spawnSync } from "node:child_process"
import { mkdirSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { tempDirs } from "../temp-dirs.ts"

const CHILD = fileURLToPath(new URL("./file-not-regular-child.ts", import.meta.url))
const freshDir = tempDirs("mycelium-not-regular-")

function fifo(path: string): string {
  execFileSync("mkfifo", [path])
  return path
}

/** What each call of the child's store did at `path`; the child gets 20 s and 2 GB of data (heap and buffers). */
function outcomes(kind: string, path: string) {
  const r = spawnSync(
    "sh",
    ["-c", 'ulimit -d 2000000 && exec "$@"', "sh", process.execPath, "--import", "tsx", CHILD, kind, path],
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
