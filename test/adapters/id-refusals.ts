// What a store does with a request id it cannot take (over its length bound): every write refused typed, as a config
// error, before anything is sent, and a read answers no row. Runtime-neutral (the workers project uses it too).
import { expect } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { LedgerConfigError, type LedgerEntry, type LedgerStorage } from "../../src/core/index.ts"

/** Checks the above for `id`; `sent` counts what reached the backend. Returns the row it tried, for later steps. */
export async function expectIdRefusedUnsent(
  storage: LedgerStorage,
  id: string,
  sent: () => number,
): Promise<LedgerEntry> {
  const row = newEntry({ requestId: id, tool: "t", owner: "w" }, 1)
  await expect(storage.tryClaimInflight(row, 60, 1)).rejects.toBeInstanceOf(LedgerConfigError)
  await expect(storage.set(row)).rejects.toBeInstanceOf(LedgerConfigError)
  await expect(storage.tryTransition(row, { outcomes: ["IN_FLIGHT"], fence: 1 })).rejects.toBeInstanceOf(
    LedgerConfigError,
  )
  expect(await storage.get(id)).toBeNull()
  expect(sent()).toBe(0)
  return row
}
