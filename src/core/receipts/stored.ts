// What a receipt store reads back. One rule for every store: a damaged receipt fails closed as
// ReceiptStoreCorruptError naming where it lies and what to do, never a bare SyntaxError (the Upstash and Durable
// Object stores let one escape, a 500 over HTTP) and never a non-receipt handed out as one.
import { hasDuplicateKey } from "../duplicate-keys.ts"
import { parsePythonJson } from "../python-json.ts"
import { ReceiptStoreCorruptError } from "./errors.ts"
import { parseReceiptJson, receiptShapeProblem } from "./record.ts"

export interface StoredReceiptOptions {
  /** Reads the text; throws on text that is not JSON or names a member twice. Default `parseReceiptJson`. */
  readonly parse?: (text: string) => unknown
  /** What is wrong with the parsed value, or null. Default `receiptShapeProblem`. */
  readonly check?: (v: unknown) => string | null
  /** What to do about text that is not JSON. */
  readonly repair?: string
}

/**
 * A stored receipt (`where`: "<file> line 3", "<list> item 2", "<table> row 7"): text is read with `parse`, a value
 * the client already parsed (`@upstash/redis` by default, JSONB) is only checked. Throws ReceiptStoreCorruptError.
 */
export function readStoredReceipt(
  stored: unknown,
  where: string,
  {
    parse = parseReceiptJson,
    check = receiptShapeProblem,
    repair = "repair or restore the receipt store",
  }: StoredReceiptOptions = {},
): unknown {
  let v = stored
  if (typeof stored === "string")
    try {
      v = parse(stored)
    } catch {
      throw new ReceiptStoreCorruptError(
        // Only text that is whole JSON: a torn one may look like a repeat ('"action": …, "action' cut in "action_kind").
        isJson(stored) && hasDuplicateKey(stored)
          ? `${where} names a member twice, which no signature covers: restore the receipt store, then retry`
          : `${where} is not JSON: ${repair}, then retry`,
      )
    }
  const problem = check(v)
  if (problem)
    throw new ReceiptStoreCorruptError(`${where} is not a receipt (${problem}): repair it, then retry`)
  return v
}

const isJson = (text: string): boolean => {
  try {
    parsePythonJson(text)
    return true
  } catch {
    return false
  }
}
