// The receipts panel: every outcome the tabs recorded, checked the way an auditor would (signatures, and the hash
// chain for gaps, reorders and forks between tabs).
import type { IndexedDbReceiptStore } from "../../src/adapters/indexeddb-guards.ts"
import { verifyReceipts } from "../../src/receipts.ts"
import { DEMO_RECEIPT_KEY } from "./demo.ts"

export async function receiptsView(store: IndexedDbReceiptStore): Promise<string> {
  const receipts = await store.list()
  if (receipts.length === 0)
    return "No receipts yet: each completed or failed call and each release signs one."
  const report = await verifyReceipts(receipts, { hmac: DEMO_RECEIPT_KEY }, { requireChain: true })
  const kinds = receipts.map((r) => `${r.action} ${r.status}`).join(", ")
  return report.ok
    ? `${receipts.length} receipts, ${report.valid} of ${receipts.length} verified (signature and chain): ${kinds}`
    : `${receipts.length} receipts, verification FAILED: ${report.failures.map((f) => f.reason).join(", ")}`
}
