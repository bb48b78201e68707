// Shared by the row list routes (`GET /v1/rows`, `GET /v1/transitions`): a page of maxPageSize rows of up to a body's
// size each was built in memory whole and passed the 64 MiB HttpLedgerStorage reads, so a listing failed for good.

/**
 * Whether each next row still fits a page of `budget` characters (its JSON text). The first row always does, so a row
 * larger than the budget comes alone and the listing still moves on; a page that refuses one ends with a cursor.
 */
export function pageBudget(budget: number): (row: unknown) => boolean {
  let used = -1
  return (row) => {
    // UTF-16 units: at most a third of the UTF-8 bytes short, well inside what a client reads.
    const n = JSON.stringify(row).length
    if (used >= 0 && used + n > budget) return false
    used = Math.max(used, 0) + n
    return true
  }
}
