// Audit receipts in the Python original's JSONL file (one `json.dumps(record.to_dict())` per line), so either
// language appends to and verifies the other's. Chain links live in a sidecar `<path>.chain.jsonl` (one line per
// chained receipt, keyed by receipt_id): the original parses every line of its file into its record type, so a
// link line there would break its reader, and a link inside the record would be dropped by it.
import { closeSync, existsSync, fstatSync, readSync, type Stats } from "node:fs"
import { hasDuplicateKey } from "../core/duplicate-keys.ts"
import type { ChainSealer, ChainTail } from "../core/receipts/chain.ts"
import { ReceiptStoreCorruptError } from "../core/receipts/errors.ts"
import {
  type AuditReceiptRecord,
  parseReceiptJson,
  type Receipt,
  type ReceiptLink,
  receiptJsonLine,
  receiptShapeProblem,
} from "../core/receipts/record.ts"
import {
  cutPage,
  matchesList,
  pageBounds,
  type ReceiptListOptions,
  type ReceiptPage,
  type ReceiptStore,
} from "../core/receipts/store.ts"
import { readStoredReceipt } from "../core/receipts/stored.ts"
import { asciiJson, errno, type LockedFileOptions } from "./file-kit.ts"
import { LockedFile, openFile } from "./file-locked.ts"

/**
 * Options for {@link FileReceiptStore}. `pythonLock`: also hold the original's flock on `<path>.lock`, which its
 * receipt file takes to append and to read (a Python reader could otherwise read this store's line half written).
 */
export type FileReceiptStoreOptions = LockedFileOptions

type LinkLine = ReceiptLink & { readonly receipt_id: string }

// The ASCII white space trim() takes off.
const BLANK = new Set([0x09, 0x0b, 0x0c, 0x0d, 0x20])

// Every writer (json.dumps, receiptJsonLine) writes ASCII, so a byte that is not UTF-8 is damage or an edit: the
// original's reader and the HTTP one refuse it, and read as U+FFFD it changed what a signature was checked over.
const UTF8 = new TextDecoder("utf-8", { fatal: true })

/**
 * The non-empty lines of JSONL file `path` with their 1-based line numbers (after `base`), in order: `count` of them
 * after the first `skip`. Each is decoded on its own, never the whole file: a page costs a newline scan, and a string
 * the exact JSON reader slices from a line keeps that line alive, not the file's text (a verify of 20,000 receipts
 * held a copy of the file per page).
 */
function lines(
  buf: Buffer | null,
  path: string,
  base = 0,
  skip = 0,
  count = Number.POSITIVE_INFINITY,
): Array<[number, string]> {
  const out: Array<[number, string]> = []
  for (let at = 0, n = base + 1; buf && at < buf.length && out.length < count; n++) {
    const nl = buf.indexOf(10, at)
    const end = nl < 0 ? buf.length : nl
    let i = at
    while (i < end && BLANK.has(buf[i] as number)) i++
    // A line of trim()'s non-ASCII white space only (U+00A0, a BOM) is empty too.
    if (i < end && ((buf[i] as number) < 0x80 || buf.toString("utf8", at, end).trim()) && skip-- <= 0)
      try {
        out.push([n, UTF8.decode(buf.subarray(at, end)).trim()])
      } catch {
        throw new ReceiptStoreCorruptError(`${path} line ${n} is not UTF-8: repair it, then retry`)
      }
    at = end + 1
  }
  return out
}

function parseLines<T>(
  path: string,
  numbered: ReadonlyArray<[number, string]>,
  check: (v: unknown) => string | null,
  parse: (line: string) => unknown,
): T[] {
  const repair = "repair or truncate the damaged line (a crash mid-append leaves one)"
  return numbered.map(
    ([n, line]) => readStoredReceipt(line, `${path} line ${n}`, { parse, check, repair }) as T,
  )
}

// A crash mid-append leaves a last line without its newline: a record appended onto it would be damaged with it.
function tornEnd(path: string, size: number): boolean {
  if (size === 0) return false
  const fd = openFile(path)
  try {
    const last = new Uint8Array(1)
    readSync(fd, last, 0, 1, size - 1)
    return last[0] !== 0x0a
  } finally {
    closeSync(fd)
  }
}

// A link's members are covered by its mac only once each, as a record's are (parseReceiptJson).
const parseLink = (line: string): unknown => {
  const v: unknown = JSON.parse(line)
  if (hasDuplicateKey(line)) throw new SyntaxError("a member named twice")
  return v
}

// Every member a link needs: a line without its digest (or with a seq of 1.5) was taken as the chain's tail, and the
// next receipt was sealed on it, with a link no repair of this line could make verify.
const linkProblem = (v: unknown): string | null => {
  const l = v as Partial<LinkLine> | null
  return l &&
    typeof l.receipt_id === "string" &&
    typeof l.ledger === "string" &&
    Number.isSafeInteger(l.seq) &&
    (l.seq as number) >= 0 &&
    (l.prev === null || typeof l.prev === "string") &&
    typeof l.digest === "string" &&
    typeof l.mac === "string"
    ? null
    : "not a chain link"
}

/**
 * The sidecar's links as last read. Appends only grow it, so a later read parses only the bytes appended since: a
 * page costs its own lines, not the store's (a one-receipt page parsed every link, an export of 40,000 took 33 s).
 */
interface ChainLinks {
  readonly dev: number
  readonly ino: number
  readonly mtimeMs: number
  /** Bytes read; `parsedTo` ends the last whole line, the bytes after it are the `torn` line. */
  readonly size: number
  readonly parsedTo: number
  readonly lineCount: number
  /** The bytes just before `parsedTo`: gone from there, the file was rewritten, not appended to. */
  readonly mark: Buffer
  readonly links: Map<string, ReceiptLink>
  readonly tails: Map<string, ChainTail>
  /** A last line without its newline (a crash mid-append, or one still being written): parsed again on a change. */
  readonly torn: LinkLine | null
}

// Link lines carry a 64-digit mac and digest, so this many bytes always hold one: another file's bytes never match.
const MARK_BYTES = 256

const noLinks = (st: Stats): ChainLinks => ({
  dev: st.dev,
  ino: st.ino,
  mtimeMs: st.mtimeMs,
  size: 0,
  parsedTo: 0,
  lineCount: 0,
  mark: Buffer.alloc(0),
  links: new Map(),
  tails: new Map(),
  torn: null,
})

const NO_CHAIN: ChainLinks = noLinks({ dev: 0, ino: 0, mtimeMs: 0 } as Stats)

function readRange(fd: number, from: number, to: number): Buffer {
  const buf = Buffer.allocUnsafe(Math.max(0, to - from))
  let got = 0
  for (let n = 1; got < buf.length && n > 0; got += n)
    n = readSync(fd, buf, got, buf.length - got, from + got)
  return buf.subarray(0, got)
}

/**
 * `was` brought up to the sidecar open as `fd`. Another process may append between two reads (it holds the lock,
 * this reader does not), or replace or truncate the file: a new inode, a smaller size, the same size with a new
 * mtime, or bytes before the parsed end that changed all parse it afresh.
 */
function chainLinks(path: string, fd: number, was: ChainLinks | null): ChainLinks {
  const st = fstatSync(fd)
  if (was && was.dev === st.dev && was.ino === st.ino) {
    if (st.size === was.size && st.mtimeMs === was.mtimeMs) return was
    if (st.size > was.size) {
      const from = was.parsedTo - was.mark.length
      const bytes = readRange(fd, from, st.size)
      if (bytes.subarray(0, was.mark.length).equals(was.mark))
        return appended(path, was, bytes.subarray(was.mark.length), st)
    }
  }
  return appended(path, noLinks(st), readRange(fd, 0, st.size), st)
}

/** `c` with the link lines of `tail` (the bytes from `c.parsedTo`); `c`'s maps change only once all of them parse. */
function appended(path: string, c: ChainLinks, tail: Buffer, st: Stats): ChainLinks {
  const end = tail.lastIndexOf(10) + 1
  const whole = tail.subarray(0, end)
  let count = 0
  for (let i = whole.indexOf(10); i >= 0; i = whole.indexOf(10, i + 1)) count++
  const added = parseLines<LinkLine>(path, lines(whole, path, c.lineCount), linkProblem, parseLink)
  const last = lines(tail.subarray(end), path, c.lineCount + count)
  const torn = parseLines<LinkLine>(path, last, linkProblem, parseLink)[0] ?? null
  for (const { receipt_id, ...link } of added) {
    c.links.set(receipt_id, link)
    c.tails.set(link.ledger, { seq: link.seq, digest: link.digest })
  }
  return {
    ...c,
    mtimeMs: st.mtimeMs,
    size: c.parsedTo + tail.length,
    parsedTo: c.parsedTo + end,
    lineCount: c.lineCount + count,
    // A copy: a slice would keep the whole read alive.
    mark: Buffer.from(
      end >= MARK_BYTES
        ? whole.subarray(end - MARK_BYTES)
        : Buffer.concat([c.mark, whole]).subarray(-MARK_BYTES),
    ),
    torn,
  }
}

/** Appends receipts to a JSONL file under the ledger file store's cross-process lock. */
export class FileReceiptStore implements ReceiptStore {
  readonly kind = "file"
  readonly #file: LockedFile
  readonly #pythonLock: boolean
  readonly chainPath: string
  #chain: ChainLinks | null = null

  constructor(path: string, options: FileReceiptStoreOptions = {}) {
    this.#file = new LockedFile(path, options)
    this.#pythonLock = options.pythonLock === true
    this.chainPath = `${this.#file.path}.chain.jsonl`
  }

  get path(): string {
    return this.#file.path
  }

  append(record: AuditReceiptRecord, chain?: ChainSealer): Promise<Receipt> {
    return this.#file.run(async () => {
      const tail = chain && this.#tailsNow().get(chain.ledger)
      // Sealed as #0, a receipt appended to a file whose links are inline (an export, which list() reads) forked the
      // chain it shows. Looked for only when a chain starts: an append costs no read of the file.
      if (chain && !tail && this.#inlineLinks())
        throw new ReceiptStoreCorruptError(
          `${this.path} holds chain links inline: it is a receipt export, not a store; append to a new file`,
        )
      const link = chain ? await chain.seal(tail ?? null) : null
      // The record first: a crash before its link leaves an unchained receipt (reported by verifyReceipts), never
      // a link without its receipt.
      // A torn line stays torn (list() names it); the record goes on a line of its own.
      const torn = tornEnd(this.path, this.#file.size())
      this.#file.append(`${torn ? "\n" : ""}${receiptJsonLine(record)}\n`)
      if (link) {
        // The sidecar too: a link line torn just before its newline still parses, and the next link appended onto it
        // made one line of two, so the whole store read as corrupt.
        const cut = tornEnd(this.chainPath, this.#file.size(this.chainPath)) ? "\n" : ""
        const line = `${cut}${asciiJson(JSON.stringify({ receipt_id: record.receipt_id, ...link }))}\n`
        this.#file.append(line, this.chainPath)
      }
      return link ? { ...record, chain: link } : { ...record }
    })
  }

  async list(options: ReceiptListOptions = {}): Promise<Receipt[]> {
    return (await this.#read(() => lines(this.#bytes(), this.path))).filter((r) => matchesList(r, options))
  }

  /** Positions are record lines (non-empty lines of the file): a page parses only its window's lines. */
  async listPage(options: ReceiptListOptions = {}): Promise<ReceiptPage> {
    const b = pageBounds(options)
    const scanned = await this.#read(() => lines(this.#bytes(), this.path, 0, b.start, b.window))
    const page = cutPage(
      scanned,
      b,
      (r) => matchesList(r, options),
      (i) => String(b.start + i + 1),
    )
    return { receipts: page.items, cursor: page.cursor }
  }

  /**
   * The records of these lines with their links. An append writes its receipt, then its link (a crash between leaves
   * it unchained, never a link without its receipt), and reads take no lock: read between the two, another process's
   * newest receipt came out linkless (a false tamper alarm, kept for good by an export). So a receipt without a link
   * is looked up again once every append that may have written it is done: the lock free (a stat, no write), or
   * held by this reader; one it cannot take (a read-only directory) is read without it.
   */
  async #read(scan: () => ReadonlyArray<[number, string]>): Promise<Receipt[]> {
    const parse = () =>
      parseLines<AuditReceiptRecord>(this.path, scan(), receiptShapeProblem, parseReceiptJson)
    // FileLock's file: there from before a receipt's line is written until after its link's.
    const appending = () => existsSync(`${this.path}.lock.ts`)
    let records: AuditReceiptRecord[] | null = null
    try {
      records = parse()
    } catch (e) {
      // A line another process is still writing can read as damaged: looked at again once its append is done. A
      // Python worker's append takes only its flock, which this store holds too with pythonLock.
      if (!(e instanceof ReceiptStoreCorruptError) || !(this.#pythonLock || appending())) throw e
    }
    if (records) {
      const first = this.#linked(records)
      if (first.every((r) => r.chain)) return first
      if (!appending()) return this.#linked(records)
    }
    const again = () => this.#linked(records ?? parse())
    return this.#file.run(again).catch((e) => {
      if (/^E(ACCES|PERM|ROFS)$/.test(errno(e) ?? "")) return again()
      throw e
    })
  }

  #linked(records: AuditReceiptRecord[]): Receipt[] {
    if (!records.length) return []
    const { links, torn } = this.#chainNow()
    return records.map((r): Receipt => {
      const link = torn?.receipt_id === r.receipt_id ? linkOf(torn) : links.get(r.receipt_id)
      return link ? { ...r, chain: link } : r
    })
  }

  /** The file's bytes, or null when it does not exist. */
  #bytes(path = this.path): Buffer | null {
    return this.#file.bytes(path) as Buffer | null
  }

  /** Whether a record line carries its link: read only where `"chain"` is, so a file of the original's parses none. */
  #inlineLinks(): boolean {
    return lines(this.#bytes(), this.path).some(([, line]) => {
      try {
        return line.includes('"chain"') && JSON.parse(line)?.chain != null
      } catch {
        return false // a damaged line is list()'s to name
      }
    })
  }

  #tailsNow(): ReadonlyMap<string, ChainTail> {
    const { tails, torn } = this.#chainNow()
    return torn ? new Map(tails).set(torn.ledger, { seq: torn.seq, digest: torn.digest }) : tails
  }

  #chainNow(): ChainLinks {
    let fd: number
    try {
      fd = openFile(this.chainPath)
    } catch (e) {
      if (errno(e) !== "ENOENT") throw e
      this.#chain = null
      return NO_CHAIN
    }
    try {
      this.#chain = chainLinks(this.chainPath, fd, this.#chain)
      return this.#chain
    } finally {
      closeSync(fd)
    }
  }
}

const linkOf = ({ receipt_id: _, ...link }: LinkLine): ReceiptLink => link
