// The verdict every action-ledger chaos run ends with, from logs kept outside the ledger.
import { expect } from "vitest"
import type { LedgerEntry } from "../../src/core/index.ts"

/** Ids the provider executed more than once, and callers' results that are not the provider's one record. */
export function exactlyOnceCounts(records: Map<string, string[]>, oks: string[][]) {
  return {
    duplicates: [...records].filter(([, refs]) => refs.length > 1),
    wrong: oks.filter(([, id, ref]) => records.get(id as string)?.[0] !== ref),
  }
}

/** Every id executed once, every caller's result and every final row the provider's record of it. */
export function expectExactlyOnce(
  records: Map<string, string[]>,
  oks: string[][],
  finals: readonly LedgerEntry[],
  ids: number,
): void {
  const { duplicates, wrong } = exactlyOnceCounts(records, oks)
  expect(duplicates, "ids the provider executed more than once").toEqual([])
  expect(wrong.slice(0, 5), "results that differ from the provider's record").toEqual([])
  expect(records.size).toBe(ids)
  expect(finals).toHaveLength(ids)
  for (const row of finals) {
    expect(row.terminalOutcome).toBe("COMPLETED")
    expect(row.result).toBe(records.get(row.requestId)?.[0])
  }
}
