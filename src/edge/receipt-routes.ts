// `ledger:reader` (operators read too) lists a tenant's audit receipts and verifies them (docs/receipts.md).
import { InvalidOptionError, MyceliumError } from "../core/errors.ts"
import { LedgerStorageUnavailableError } from "../core/ledger/errors.ts"
import { type Receipt, receiptExportLine } from "../core/receipts/record.ts"
import {
  matchesList,
  type ReceiptListOptions,
  type ReceiptPage,
  type ReceiptStore,
} from "../core/receipts/store.ts"
import { verifyReceipts } from "../core/receipts/verify.ts"
import { DEFAULT_MAX_RESPONSE_BYTES } from "../core/storage/read-limited.ts"
import type { Api, Ctx, RouteContext, TenantReceipts } from "./context.ts"
import { HttpError } from "./errors.ts"
import { ReceiptsFilterQuery, ReceiptsQuery, VerifyReceiptsBody } from "./schemas.ts"

// Verify reads the store in pages of at most this many receipts, counting receipts and bytes as it goes, so an
// oversized store is refused after reading at most the bounds plus one page. The first page is small and later ones
// fit the bytes left at the largest receipt's size: receipts of 1 MiB are refused before a page of them fills memory.
const VERIFY_PAGE = 1000
const FIRST_PAGE = 10

// Stores read the original's integers beyond 2^53 as exact bigints, which JSON.stringify refuses (a 500 before):
// they go out as their decimal digits, as the CLI's --json prints them. /v1/receipts/verify checks the exact values.
/**
 * A receipt store's own failure (a driver's TypeError, a socket reset) answered 500 internal_error: an outage is the
 * ledger's retryable 503, as its storage's. The package's typed errors (a corrupt store, a refused page) pass as they are.
 */
async function fromStore<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (e) {
    if (e instanceof MyceliumError) throw e
    throw new LedgerStorageUnavailableError("receipt store unavailable; retry shortly", { cause: e })
  }
}

const bigintAsText = (_key: string, v: unknown): unknown => (typeof v === "bigint" ? `${v}` : v)

/**
 * `createLedgerApp`'s `maxVerifyReceipts` / `maxVerifyBytes` / `maxReceiptPageBytes`, checked when the app is built:
 * NaN (an unset env var) refused every verify as the caller's 400, and 0, -1 or 1.5 refused every tenant with 413.
 */
function receiptBound(
  name: "maxVerifyReceipts" | "maxVerifyBytes" | "maxReceiptPageBytes",
  v: unknown,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (Number.isSafeInteger(v) && (v as number) >= 1 && (v as number) <= max) return v as number
  const example = { maxVerifyReceipts: 100_000, maxVerifyBytes: 2 ** 26, maxReceiptPageBytes: 2 ** 23 }[name]
  throw new InvalidOptionError(
    `${name} must be a whole number ${max < Number.MAX_SAFE_INTEGER ? `from 1 to ${max}` : ">= 1"}, got ${typeof v === "number" ? v : typeof v}: pass e.g. { ${name}: ${example} }, or omit it`,
  )
}

/**
 * One page of at most `limit` receipts and `budget` bytes of lines, read as verify reads: a small page first, then pages
 * that fit the bytes left at the largest receipt's size. Stores hand out a cursor per page only, so a page that
 * passes the budget is read again up to its last receipt that fits, and ends the answer there.
 */
async function boundedPage(
  store: ReceiptStore,
  options: ReceiptListOptions,
  limit: number,
  budget: number,
): Promise<{ page: ReceiptPage; lines: string[] }> {
  const receipts: Receipt[] = []
  const lines: string[] = []
  let bytes = 0
  let largest = 1
  // The receipts asked for so far: a filtered page scans 20 x its limit, so these pages together scan no more
  // than the caller's limit allows.
  let left = limit
  let take = Math.min(FIRST_PAGE, limit)
  let cursor = options.cursor
  for (;;) {
    const page = await store.listPage({ ...options, limit: take, cursor })
    const sized = page.receipts.map(receiptExportLine)
    let fit = 0
    for (const line of sized) {
      // +1: its newline. The first receipt of the answer always goes in.
      if (receipts.length + fit > 0 && bytes + line.length + 1 > budget) break
      bytes += line.length + 1
      largest = Math.max(largest, line.length + 1)
      fit++
    }
    if (fit < sized.length) {
      // The receipts that fit, read again for the cursor after the last of them (none fit: the previous cursor).
      const again = fit ? await store.listPage({ ...options, limit: fit, cursor }) : null
      if (again) {
        // Written from this read: a row committed late (Postgres ids) may have joined the receipts that fit.
        receipts.push(...again.receipts)
        lines.push(...again.receipts.map(receiptExportLine))
      }
      return { page: { receipts, cursor: again ? again.cursor : (cursor ?? null) }, lines }
    }
    receipts.push(...page.receipts)
    lines.push(...sized)
    left -= take
    cursor = page.cursor ?? undefined
    if (page.cursor === null || left === 0) return { page: { receipts, cursor: page.cursor }, lines }
    take = Math.min(left, Math.max(1, Math.floor((budget - bytes) / largest)))
  }
}

export function receiptRoutes(api: Api, ctx: RouteContext): void {
  receiptBound("maxVerifyReceipts", ctx.maxVerifyReceipts)
  receiptBound("maxVerifyBytes", ctx.maxVerifyBytes)
  // A receipts page ends at this many bytes of receipt lines (a receipt larger than that comes alone, so it still
  // exports): pages of 500 receipts of 150 KB passed the 64 MiB `receipts export` refuses, and were built in memory
  // whole. Hence at most those 64 MiB. The Durable Object stops its own pages at 8 MiB of text as well.
  const pageBytes = receiptBound("maxReceiptPageBytes", ctx.maxReceiptPageBytes, DEFAULT_MAX_RESPONSE_BYTES)
  const receiptsOf = (c: Ctx): TenantReceipts => {
    const { receipts } = ctx.need(c, "reader")
    if (!receipts) throw new HttpError("receipts_not_configured", "this ledger does not keep audit receipts")
    return receipts
  }
  const filter = (q: { agent_id?: string | undefined; ledger?: string | undefined }) => ({
    agentId: q.agent_id,
    ledger: q.ledger,
  })

  api.get("/v1/receipts", async (c) => {
    const { emitter } = receiptsOf(c)
    const q = ctx.query(c, ReceiptsQuery)
    const limit = ctx.pageLimit(q.limit)
    const { page, lines } = await fromStore(() =>
      boundedPage(emitter.store, { ...filter(q), cursor: q.cursor }, limit, pageBytes),
    )
    if (q.format !== "jsonl")
      return c.body(JSON.stringify(page, bigintAsText), 200, { "content-type": "application/json" })
    // The next page goes in a Link header (RFC 8288), as a query-only reference: it resolves against this
    // request's URL, so it stays right when the app is mounted under a prefix.
    const headers: Record<string, string> = { "content-type": "application/x-ndjson; charset=utf-8" }
    if (page.cursor !== null) {
      const next = new URL(c.req.url).searchParams
      next.set("cursor", page.cursor)
      headers.link = `<?${next}>; rel="next"`
    }
    return c.body(lines.map((line) => `${line}\n`).join(""), 200, headers)
  })

  // Verification needs the whole chain at once, so it is bounded by the tenant's receipt count and bytes, not by a page.
  api.post("/v1/receipts/verify", async (c) => {
    const { emitter, keys } = receiptsOf(c)
    const options = filter(ctx.query(c, ReceiptsFilterQuery))
    const b = await ctx.body(c, VerifyReceiptsBody)
    if (b.allow_unchained && b.require_chain)
      throw new HttpError("invalid_body", "require_chain and allow_unchained contradict: send one of them")
    const list: Receipt[] = []
    let seen = 0
    let bytes = 0
    let largest = 1
    let limit = FIRST_PAGE
    let cursor: string | null | undefined
    do {
      const page = await fromStore(() => emitter.store.listPage({ limit, cursor: cursor ?? undefined }))
      seen += page.receipts.length
      if (seen > ctx.maxVerifyReceipts)
        throw new HttpError(
          "too_many_receipts",
          `over ${ctx.maxVerifyReceipts} receipts: verify next to the store (docs/http-api.md)`,
        )
      for (const r of page.receipts) {
        const size = JSON.stringify(r, bigintAsText).length
        bytes += size
        largest = Math.max(largest, size)
        if (bytes > ctx.maxVerifyBytes)
          throw new HttpError(
            "too_many_receipts",
            `over ${ctx.maxVerifyBytes} bytes of receipts: verify next to the store (docs/http-api.md)`,
          )
        if (matchesList(r, options)) list.push(r)
      }
      limit = Math.min(VERIFY_PAGE, Math.max(1, Math.floor((ctx.maxVerifyBytes - bytes) / largest)))
      cursor = page.cursor
    } while (cursor !== null)
    // Every receipt this app writes is chained, so links are required unless the caller says another writer appends
    // unchained ones: without requireChain, a stripped link moved before the chains can hide a deletion.
    const report = await verifyReceipts(list, keys, {
      requireChain: b.require_chain ?? !b.allow_unchained,
      allowUnchained: b.allow_unchained === true,
      ...(b.heads ? { heads: b.heads } : {}),
    })
    return c.json(report)
  })
}
