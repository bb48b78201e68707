// Shared by the adapter benches: a ledger file pre-filled with completed rows, in the Python layout.
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { entryToRow, newEntry } from "../src/adapter-kit.ts"

/** A ledger file with `rows` completed rows, written directly (no ledger calls), or no file when rows is 0. */
export function seededFile(dir: string, rows: number, tag: string): string {
  const path = join(dir, `ledger-${rows}-${tag}.json`)
  const data: Record<string, unknown> = {}
  for (let i = 0; i < rows; i++) {
    const id = `seed-${String(i).padStart(5, "0")}`
    data[id] = entryToRow(
      newEntry(
        {
          requestId: id,
          tool: "send_payment",
          kwargs: { amount: i, recipient: "acct_seed", tool_call_id: `seed-call-${i}` },
          terminalOutcome: "COMPLETED",
          status: "completed",
          fence: 1,
          result: { ok: true, amount: i },
          sideEffectBoundary: "crossed",
          effectPhase: "COMMITTED",
        },
        1_780_000_000 + i,
      ),
    )
  }
  if (rows) writeFileSync(path, JSON.stringify(data, null, 2))
  return path
}
