// A separate process appending receipts to one JSONL file (adversarial-stores.test.ts): argv path, writer, count.
import { FileReceiptStore } from "../../../../src/adapters/file-receipts.ts"
import { hmacReceiptSigner, ReceiptEmitter } from "../../../../src/core/receipts/index.ts"

const [path, writer, count, startAt] = process.argv.slice(2) as [string, string, string, string?]
const emitter = new ReceiptEmitter({
  signer: hmacReceiptSigner("adversarial-stores-key"),
  store: new FileReceiptStore(path),
  agentId: "shared-agent",
})
const wait = Number(startAt ?? 0) - Date.now()
if (wait > 0) await new Promise((r) => setTimeout(r, wait))
for (let i = 0; i < Number(count); i++) {
  await emitter.emit({ action: "pay", actionKind: "tool", requestId: `${writer}-${i}`, status: "completed" })
  // Bursts of 5 contend for the lock; between them a pause longer than the lock's longest back-off (16 ms) lets
  // the other writers in, so the appends interleave whatever the scheduler does.
  if (i % 5 === 4) await new Promise((r) => setTimeout(r, 20))
}
