// `mycelium receipts export`: a tenant's receipts from the ledger HTTP API as one JSONL file that `mycelium receipts
// verify` checks offline. It asks for `format=jsonl`, which keeps each value in the form its signature covers (plain
// JSON turns the original's `100.0` into `100`), and follows the API's `Link: rel="next"` pages.
import {
  parseReceiptJson,
  type Receipt,
  receiptExportLine,
  receiptShapeProblem,
} from "../core/receipts/record.ts"
import { RECEIPT_CURSOR } from "../core/receipts/store.ts"
import { DEFAULT_MAX_RESPONSE_BYTES, readLimited } from "../core/storage/read-limited.ts"
import {
  DEFAULT_REQUEST_TIMEOUT,
  MAX_REQUEST_TIMEOUT,
  requestSignal,
} from "../core/storage/request-timeout.ts"
import { CliError, UsageError } from "./errors.ts"
import { LOOPBACK_HOSTS } from "./options.ts"

export interface ReceiptExportOptions {
  /** The API's base URL (`https://ledger.example.com/ledger`), or its `/v1/receipts` URL. */
  readonly url: string
  /** Sent as `Authorization: Bearer <token>`: it needs the `ledger:reader` scope. */
  readonly token?: string | undefined
  readonly agentId?: string | undefined
  readonly ledger?: string | undefined
  /** More receipts than this stop the export (default DEFAULT_MAX_RECEIPTS): a server can page forever. */
  readonly maxReceipts?: number | undefined
  /** Seconds each page may take, headers and body together (default DEFAULT_REQUEST_TIMEOUT). */
  readonly requestTimeout?: number | undefined
  /** Called with each page's lines, in order; the export is complete when the promise resolves. */
  readonly write: (text: string) => void
}

const PAGE = 500
const DEFAULT_MAX_RECEIPTS = 1_000_000
// A filtered page scans a window of PAGE * PAGE_SCAN_FACTOR receipts and may match none of them: the API then
// answers an empty page that points further on, which a server could do forever. This many in all cover 100 million
// receipts of other agents or chains.
const MAX_EMPTY_PAGES = 10_000

/** `--max-receipts` and `--timeout` as numbers; a value that is not one is a UsageError. */
export function exportLimits(raw: { maxReceipts?: string | undefined; timeout?: string | undefined }): {
  maxReceipts: number
  requestTimeout: number
} {
  const maxReceipts = raw.maxReceipts === undefined ? DEFAULT_MAX_RECEIPTS : Number(raw.maxReceipts)
  if (!(Number.isSafeInteger(maxReceipts) && maxReceipts >= 1 && /^\d+$/.test(raw.maxReceipts ?? "1")))
    throw new UsageError(`--max-receipts ${raw.maxReceipts}: use a whole number of receipts, 1 or more`)
  const requestTimeout = raw.timeout === undefined ? DEFAULT_REQUEST_TIMEOUT : Number(raw.timeout)
  // Number("") is 0 and Number(" 5") or Number("0x1e") a number too: only a plain decimal is taken here.
  if (
    !/^\d*\.?\d+$/.test(raw.timeout ?? "1") ||
    !(Math.round(requestTimeout * 1000) >= 1 && requestTimeout <= MAX_REQUEST_TIMEOUT)
  )
    throw new UsageError(
      `--timeout ${raw.timeout}: use a number of seconds above 0, at most ${MAX_REQUEST_TIMEOUT}`,
    )
  return { maxReceipts, requestTimeout }
}

/** The first URL of the export; refuses what would send the token in clear text to another machine. */
export function exportUrl(options: Pick<ReceiptExportOptions, "url" | "token" | "agentId" | "ledger">): URL {
  let url: URL
  try {
    url = new URL(options.url)
  } catch {
    // Not echoed, and below only its origin and path: userinfo, a query or a fragment may hold a password or token.
    throw new UsageError("--url is not a URL (for example https://ledger.example.com)")
  }
  const shown = `--url ${url.origin}${url.pathname}`
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new UsageError(`--url: use an http(s) URL, not ${url.protocol}`)
  if (url.protocol === "http:" && options.token && !LOOPBACK_HOSTS.has(url.hostname))
    throw new UsageError(`${shown}: use https for a remote API, the token would travel in clear text`)
  if (url.search || url.hash || url.username || url.password)
    throw new UsageError(
      `${shown}: pass the API's base URL alone, no credentials, query or fragment (filters are flags; the token goes in MYCELIUM_TOKEN)`,
    )
  const path = url.pathname.replace(/\/+$/, "")
  url.pathname = path.endsWith("/v1/receipts") ? path : `${path}/v1/receipts`
  url.searchParams.set("format", "jsonl")
  url.searchParams.set("limit", String(PAGE))
  if (options.agentId) url.searchParams.set("agent_id", options.agentId)
  if (options.ledger) url.searchParams.set("ledger", options.ledger)
  return url
}

/** The `rel="next"` target of a Link header, resolved against the page it came with. */
function nextOf(link: string | null, page: URL): URL | null {
  const m = link ? /<([^>]*)>\s*;\s*rel="?next"?/i.exec(link) : null
  if (!m) return null
  let next: URL
  try {
    next = new URL(m[1] as string, page)
  } catch {
    throw new CliError(`the API's next-page link is not a URL (${link}): is --url the ledger API?`)
  }
  // The token goes with every page: a link to anywhere else could hand it to another server.
  if (next.origin !== page.origin || next.pathname !== page.pathname)
    throw new CliError(
      `the API's next-page link leaves ${page.origin}${page.pathname}: refusing to follow it`,
    )
  // Only the position may change: a link that drops a filter would export another agent's receipts under this
  // one's name, and a position that does not move forward would page in circles.
  const cursor = next.searchParams.get("cursor") ?? ""
  const was = page.searchParams.get("cursor")
  const rest = (u: URL) =>
    [...u.searchParams]
      .filter(([k]) => k !== "cursor")
      .map(([k, v]) => `${k}=${v}`)
      .sort()
      .join("&")
  if (
    rest(next) !== rest(page) ||
    next.searchParams.getAll("cursor").length !== 1 ||
    !RECEIPT_CURSOR.test(cursor) ||
    (was !== null && Number(cursor) <= Number(was))
  )
    throw new CliError(`the API's next-page link (${m[1]}) changes more than a forward position: stopping`)
  return next
}

async function errorOf(res: Response): Promise<string> {
  const bytes = await readLimited(res, 64 * 1024).catch(() => null)
  try {
    const { error } = JSON.parse(new TextDecoder().decode(bytes ?? new Uint8Array())) as {
      error?: { code?: unknown; message?: unknown }
    }
    if (typeof error?.code === "string") return `${error.code}: ${String(error.message ?? "")}`
  } catch {}
  return "not the ledger API's error body"
}

function decode(bytes: Uint8Array, url: URL): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes)
  } catch {
    throw new CliError(`a page from ${url.origin} is not UTF-8: is --url the ledger API?`)
  }
}

/** One page's text and Link header; `signal` (a timeout) cuts off the body read as well as the wait for headers. */
async function fetchPage(
  url: URL,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<{ text: string; link: string | null }> {
  let res: Response
  try {
    res = await fetch(url, { headers, redirect: "error", signal })
  } catch (e) {
    if (signal.aborted) throw e
    // Node's fetch says only "fetch failed"; the reason (ECONNREFUSED, a certificate, DNS) is its cause.
    const cause = (e as { cause?: { code?: unknown; message?: unknown } }).cause
    const why = cause ? String(cause.code ?? cause.message) : ""
    throw new CliError(
      `cannot reach ${url.origin}: ${e instanceof Error ? e.message : String(e)}${why ? ` (${why})` : ""}`,
    )
  }
  if (!res.ok) {
    const hint =
      res.status === 401 || res.status === 403 ? " (check the token and its ledger:reader scope)" : ""
    throw new CliError(`${url.origin} answered ${res.status}, ${await errorOf(res)}${hint}`)
  }
  if (!(res.headers.get("content-type") ?? "").startsWith("application/x-ndjson")) {
    await res.body?.cancel().catch(() => undefined)
    throw new CliError(`${url.href} did not answer a receipt export: is --url the ledger API's base URL?`)
  }
  const bytes = await readLimited(res, DEFAULT_MAX_RESPONSE_BYTES)
  // The API ends a page at its maxReceiptPageBytes of lines (at most 64 MiB), so only a page of one receipt can be
  // this large.
  if (!bytes)
    throw new CliError(
      `a page from ${url.origin} is over ${DEFAULT_MAX_RESPONSE_BYTES} bytes: the ledger API sends one this large ` +
        "only for a single receipt this large, which cannot be exported; read it from the store itself",
    )
  return { text: decode(bytes, url), link: res.headers.get("link") }
}

/** Fetches every page; returns how many receipts were written. */
export async function exportReceipts(options: ReceiptExportOptions): Promise<number> {
  let url: URL | null = exportUrl(options)
  const filtered = url.searchParams.has("agent_id") || url.searchParams.has("ledger")
  const max = options.maxReceipts ?? DEFAULT_MAX_RECEIPTS
  const seconds = options.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT
  const headers: Record<string, string> = { accept: "application/x-ndjson" }
  if (options.token) headers.authorization = `Bearer ${options.token}`
  let count = 0
  let empty = 0
  while (url) {
    const signal = requestSignal(seconds)
    let page: { text: string; link: string | null }
    try {
      page = await fetchPage(url, headers, signal)
    } catch (e) {
      if (!signal.aborted) throw e
      throw new CliError(`${url.href} did not answer within ${seconds} s (--timeout): stopping`)
    }
    const lines = page.text.split("\n").filter((l) => l.trim() !== "")
    // Checked before any of the page is written: standard output gets no more than the cap, and -o no file.
    if (lines.length > PAGE)
      throw new CliError(
        `a page from ${url.origin} holds ${lines.length} lines, more than the ${PAGE} it was asked for: stopping`,
      )
    if (count + lines.length > max)
      throw new CliError(
        `the API has more than ${max} receipts to export (--max-receipts): stopping; raise --max-receipts or ` +
          "narrow the export with --agent-id or --ledger",
      )
    // Written again from what was read, not as sent: the writers' own form is ASCII (ensure_ascii), so a raw C1
    // control or bidi override a hostile server put inside a string reaches the file or terminal escaped. The
    // values keep their exact forms (parseReceiptJson), so the text every signature covers is unchanged.
    const { origin } = url
    const out = lines.map((line, i) => {
      let receipt: unknown
      let problem: string | null
      try {
        receipt = parseReceiptJson(line)
        problem = receiptShapeProblem(receipt)
      } catch {
        problem = "not JSON"
      }
      if (problem) throw new CliError(`receipt ${count + i + 1} from ${origin} is not a receipt (${problem})`)
      return receiptExportLine(receipt as Receipt)
    })
    if (out.length) options.write(`${out.join("\n")}\n`)
    count += lines.length
    const next = nextOf(page.link, url)
    // Unfiltered, an API page holds `limit` receipts or as many as its maxReceiptPageBytes take, at least one, so an empty page
    // that points on is a server paging in place; filtered, a scan window without a match is empty and points on, up to MAX_EMPTY_PAGES in all.
    if (next && !lines.length && (!filtered || ++empty > MAX_EMPTY_PAGES))
      throw new CliError(
        filtered
          ? `the API answered over ${MAX_EMPTY_PAGES} empty pages that point to another: stopping`
          : "the API answered an empty page that points to another (without a filter it is the last): stopping",
      )
    url = next
  }
  return count
}
