// The original's FileAuditReceiptStorage appends its JSONL file and reads it under its flock on `<path>.lock`
// (storage/file_lock.py's PathFileLock), so `pythonLock` holds that flock around this store's appends too, and a read
// that meets a line half written (a Python worker's append in progress) reads it again under that flock. The Python
// writer here does what the original's append does, in two writes so that a reader can see the half line.
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { describe, expect, it } from "vitest"
import { FileReceiptStore } from "../../src/adapters/file-receipts.ts"
import { loadConfigFromString } from "../../src/core/config/index.ts"
import { hmacReceiptSigner, ReceiptEmitter, ReceiptStoreCorruptError } from "../../src/core/receipts/index.ts"
import { nodeReceiptStoreFactory } from "../../src/node/config.ts"
import { tempDirs } from "../temp-dirs.ts"

const freshDir = tempDirs("rcpt-pylock-")

// Takes the flock, writes the first half of a record line, prints "half", then waits for a line on stdin before it
// writes the rest and lets go of the lock.
const PY_APPENDER = `
import fcntl, json, sys
path = sys.argv[1]
line = json.dumps({"receipt_id": "rcpt-00000000000000py", "agent_id": "py", "action": "pay",
                   "action_kind": "tool", "request_id": "py-1", "inputs": {"args": [], "kwargs": {}},
                   "outputs": None, "status": "completed", "timestamp": 1767225600.0, "signature": "0" * 64,
                   "error": None}) + "\\n"
with open(path + ".lock", "a+", encoding="utf-8") as handle:
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line[:40])
            f.flush()
            print("half", flush=True)
            sys.stdin.readline()
            f.write(line[40:])
    finally:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
`

/** The Python appender, resolved once it has written half its line under the flock. */
async function halfAppended(path: string): Promise<ChildProcess> {
  const py = spawn("python3", ["-c", PY_APPENDER, path], { stdio: ["pipe", "pipe", "inherit"] })
  await new Promise<void>((ok, fail) => {
    py.once("error", fail)
    py.stdout?.once("data", () => ok())
  })
  return py
}

const finish = (py: ChildProcess) => {
  const exit = new Promise<number | null>((r) => py.once("exit", r))
  py.stdin?.end("go\n")
  return exit
}

const pay = (requestId: string) =>
  ({ action: "pay", actionKind: "tool", requestId, status: "completed" }) as const

/** A store holding receipt r0, and a Python worker half-way through appending its own under the flock. */
async function pythonMidAppend() {
  const path = join(freshDir(), "receipts.jsonl")
  await emitter(path, true).emit(pay("r0"))
  return { path, py: await halfAppended(path) }
}

const emitter = (path: string, pythonLock: boolean) =>
  new ReceiptEmitter({
    signer: hmacReceiptSigner("py-lock-key"),
    store: new FileReceiptStore(path, { pythonLock }),
    agentId: "payer",
  })

describe("FileReceiptStore with pythonLock", () => {
  it("an append waits for a Python append holding the original's flock, and lands after its line", async () => {
    const { path, py } = await pythonMidAppend()
    let landed = false
    const append = emitter(path, true)
      .emit(pay("r1"))
      .then(() => {
        landed = true
      })
    // Only the order can fail here, never the time: with the flock held, the append cannot land however long this is.
    await sleep(300)
    expect(landed).toBe(false)
    expect(await finish(py)).toBe(0)
    await append
    const ids = readFileSync(path, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l).request_id)
    expect(ids).toEqual(["r0", "py-1", "r1"])
  }, 30_000)

  it("a read that meets a Python line half written reads it again once the flock is free", async () => {
    const { path, py } = await pythonMidAppend()
    // list() reads the file before it first waits: the half line is what it sees.
    const read = new FileReceiptStore(path, { pythonLock: true }).list()
    const plain = new FileReceiptStore(path).list()
    await expect(plain).rejects.toBeInstanceOf(ReceiptStoreCorruptError)
    expect(await finish(py)).toBe(0)
    expect((await read).map((r) => r.request_id)).toEqual(["r0", "py-1"])
  }, 30_000)

  it("mycelium.yaml's audit_receipt.python_lock reaches the file store; other stores refuse the key", async () => {
    const path = join(freshDir(), "receipts.jsonl")
    const yaml = (storage: string, extra = "") =>
      `transition:\n  agent_id: a\n  policy_version: v\naudit_receipt:\n  signing_key: k\n  storage: ${storage}\n${extra}  python_lock: true\n`
    const cfg = loadConfigFromString(yaml("file", `  path: ${JSON.stringify(path)}\n`), {
      receiptStoreFactory: nodeReceiptStoreFactory,
    })
    const { store } = await cfg.receipts()
    await store.append({
      receipt_id: "rcpt-0000000000000001",
      agent_id: "a",
      action: "pay",
      action_kind: "tool",
      request_id: "r",
      inputs: { args: [], kwargs: {} },
      outputs: null,
      status: "completed",
      timestamp: 1767225600,
      signature: "0".repeat(64),
      error: null,
    })
    // The flock's file is made by the first locked write, as the original's PathFileLock makes it.
    expect(readFileSync(`${path}.lock`, "utf8")).toBe("")
    expect(() => loadConfigFromString(yaml("memory"))).toThrow(/'python_lock' does not apply/)
  })
})
