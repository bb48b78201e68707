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

/**
 * `found` is empty. The message names the first finding: CI keeps only an assertion's first line, where vitest prints
 * a list as `[ Array(1) ]`.
 */
export function expectNone(found: readonly unknown[], what: string): void {
  expect(found.slice(0, 5), found.length ? `${what}, first: ${JSON.stringify(found[0])}` : what).toEqual([])
}

/** Every id executed once, every caller's result and every final row the provider's record of it. */
export function expectExactlyOnce(
  records: Map<string, string[]>,
  oks: string[][],
  finals: readonly LedgerEntry[],
  ids: number,
): void {
  const { duplicates, wrong } = exactlyOnceCounts(records, oks)
  expectNone(duplicates, "ids the provider executed more than once")
  expectNone(wrong, "results that differ from the provider's record")
  expect(records.size).toBe(ids)
  expect(finals).toHaveLength(ids)
  for (const row of finals) {
    expect(row.terminalOutcome).toBe("COMPLETED")
    expect(row.result).toBe(records.get(row.requestId)?.[0])
  }
}
