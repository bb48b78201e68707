// A child for file-not-regular.test.ts: reads and writes one file store at `path` (a FIFO, /dev/zero, a directory)
// and prints, per call, how it ended (`swapped`: a ledger file read, then replaced by the FIFO at `path`). Run apart:
// on a FIFO a call blocked for good, and /dev/zero was read until memory ran out; the parent bounds both.
// With `<what> <suffix>...` after them it first plants, at `path` + each suffix (`{pid}`: this process's), a FIFO
// (`fifo`), a symlink to /dev/zero (`zero`), a directory (`dir`) or a symlink to `<path>.victim` (`link`).
import { execFileSync } from "node:child_process"
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { FileReceiptStore } from "../../src/adapters/file-receipts.ts"
import { FileStateFlushStore } from "../../src/adapters/file-state.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { snapshot, taskRecord } from "./file-kit-stall-rows.ts"

type Calls = Array<[string, () => Promise<unknown>]>

const [kind, path, plant, ...suffixes] = process.argv.slice(2) as [string, string, string?, ...string[]]
const options = { fsync: false, lockTimeout: 5, pythonLock: kind === "flock" }
for (const suffix of suffixes) {
  const at = path + suffix.replace("{pid}", String(process.pid))
  if (plant === "fifo") execFileSync("mkfifo", [at])
  if (plant === "zero") symlinkSync("/dev/zero", at)
  if (plant === "dir") mkdirSync(at)
  if (plant === "link") symlinkSync(`${path}.victim`, at)
}
const row = newEntry({ requestId: "r-1", tool: "pay", kwargs: {} }, 1)
const receipt = {
  receipt_id: "rc-1",
  agent_id: "a",
  action: "pay",
  action_kind: "tool" as const,
  request_id: "r-1",
  inputs: { args: [], kwargs: {} },
  outputs: null,
  status: "completed" as const,
  timestamp: 1,
  signature: "00",
  error: null,
}

function ledgerCalls(): Calls {
  const s = new FileLedgerStorage(path, options)
  return [
    ["read", () => s.get("r-1")],
    ["write", () => s.set(row)],
  ]
}

const stores: Record<string, () => Calls> = {
  ledger: ledgerCalls,
  flock: ledgerCalls,
  swapped: () => {
    const file = `${path}.json`
    writeFileSync(file, "{}")
    const s = new FileLedgerStorage(file, options)
    return [
      ["write", () => s.set(row)],
      ["swap", async () => renameSync(path, file)],
      ["read", () => s.get("r-1")],
    ]
  },
  tasks: () => {
    const s = new FileTaskStore(path, options)
    return [
      ["read", () => s.get("t-1")],
      ["write", () => s.swap("t-1", null, taskRecord("t-1", "a"))],
    ]
  },
  state: () => {
    const s = new FileStateFlushStore(path, options)
    return [
      ["read", () => s.load("run-1")],
      ["write", () => s.save(snapshot("run-1"))],
    ]
  },
  receipts: () => {
    const s = new FileReceiptStore(path, options)
    return [
      ["read", () => s.list()],
      ["write", () => s.append(receipt)],
    ]
  },
}

for (const [op, call] of stores[kind]?.() ?? []) {
  const outcome = await call().then(
    () => ({ op, ok: true }),
    (e: Error & { code?: string }) => ({ op, name: e.name, code: e.code, message: e.message }),
  )
  process.stdout.write(`${JSON.stringify(outcome)}\n`)
}
