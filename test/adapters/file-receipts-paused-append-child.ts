// A writer stopped inside an append, between its receipt's line and its link's (file-receipts-live-read.test.ts):
// argv path, count, go[, "torn"]. It appends `count` chained receipts; before the last one's link is written it
// prints "paused" and waits, still holding the store's lock, until the file `go` exists. The append is the store's
// own: only the write of the link line is held back. With "torn", the last receipt's own line is held back instead,
// half of it written, as a reader can see a line another process is still writing.
import { createRequire, syncBuiltinESMExports } from "node:module"
import { FileReceiptStore } from "../../src/adapters/file-receipts.ts"
import { hmacReceiptSigner, ReceiptEmitter } from "../../src/core/receipts/index.ts"

const [path, count, go, mode] = process.argv.slice(2) as [string, string, string, string?]
const fs: typeof import("node:fs") = createRequire(import.meta.url)("node:fs")
const append = fs.appendFileSync
let links = 0
let records = 0
const pause = () => {
  fs.writeSync(1, "paused\n")
  const nap = new Int32Array(new SharedArrayBuffer(4))
  // Bounded only so that a failed test leaves no process behind.
  for (const end = Date.now() + 60_000; !fs.existsSync(go) && Date.now() < end; ) Atomics.wait(nap, 0, 0, 2)
}
// The store imports appendFileSync by name: syncBuiltinESMExports() hands it this one.
fs.appendFileSync = (file, data, options) => {
  const text = String(data)
  // A link line is the one with a mac: its receipt's line is written and fsynced by now.
  if (text.includes('"mac"')) {
    if (mode !== "torn" && ++links === Number(count)) pause()
  } else if (mode === "torn" && ++records === Number(count)) {
    const half = Math.floor(text.length / 2)
    append(file, text.slice(0, half), options)
    pause()
    return append(file, text.slice(half), options)
  }
  append(file, data, options)
}
syncBuiltinESMExports()

const emitter = new ReceiptEmitter({
  signer: hmacReceiptSigner("live-read-key"),
  store: new FileReceiptStore(path),
  agentId: "payer",
})
for (let i = 0; i < Number(count); i++)
  await emitter.emit({ action: "pay", actionKind: "tool", requestId: `r${i}`, status: "completed" })
