// `parseToolArguments`: JSON from a model, parsed so that transition keys match the Python original's, which
// parses the same text with `json.loads` (exact ints, floats). See docs/keys.md.
import { type ExactJsonValue, parseExactJson } from "../../exact-json.ts"
import { clipText } from "../../tools/errors.ts"
import { LedgerError } from "../errors.ts"

/**
 * A value `parseToolArguments` returns: JSON, with `bigint` for integers beyond 2^53 and a boxed `Number` for an
 * integral float beyond 2^53 (see below).
 */
export type ToolArgumentValue = ExactJsonValue

/** The tool-call arguments object a model produced. */
export type ToolArguments = { [key: string]: ToolArgumentValue }

/**
 * The arguments type a tool or task body may declare: `A` itself when it is an object (an interface too); for a list,
 * `Map`, `Set` or function, which the runtime refuses before the claim, a type no call can match, so tsc names the
 * rule.
 */
export type ToolArgs<A> = A extends
  | readonly unknown[]
  | ReadonlyMap<unknown, unknown>
  | ReadonlySet<unknown>
  | ((...args: never[]) => unknown)
  ? { readonly "tool arguments must be a plain object of JSON values": never }
  : A

/** The arguments text is not a JSON object. Nothing was called; ask the model to re-send valid JSON. */
export class ToolArgumentsError extends LedgerError {
  override readonly name = "ToolArgumentsError"
  override readonly code = "tool_arguments_invalid"
}

const TWO_53 = 2 ** 53

/**
 * Parses a tool call's JSON arguments the way Python's `json.loads` sees them, so the transition key matches:
 * - an integer beyond 2^53 (`9007199254740993`) is a `bigint`, exact; within 2^53 it is a `number`;
 * - `-0` is the integer 0 (`-0.0` stays the float -0);
 * - an integral float beyond 2^53 written as a float (`1e16`, `9007199254740993.0`) is a boxed `Number`, which the
 *   key writes as Python's float (`1e+16`); `+x` unboxes it. Below 2^53 `10.0` is the number 10, keyed as the
 *   integer `10` (the one case a JavaScript number cannot carry; docs/keys.md).
 * Ordinary input costs one `JSON.parse` and a walk over its numbers.
 */
export function parseToolArguments(text: string): ToolArguments {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    throw invalid(`the arguments are not valid JSON (${(e as Error).message})`)
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw invalid(
      `the arguments must be a JSON object, got ${Array.isArray(value) ? "an array" : typeof value}`,
    )
  }
  try {
    if (!needsExactParse(value)) return value as ToolArguments
    return parseExactJson(text, "beyond-2^53") as ToolArguments
  } catch (e) {
    // Valid JSON always parses here too; a RangeError is nesting too deep for the recursive parser.
    throw invalid(`the arguments could not be parsed exactly (${(e as Error).message})`)
  }
}

// The detail quotes JSON.parse's message, which quotes the model's text (V8: a snippet, cut inside a pair or holding
// "\n\nSYSTEM: ..."): clipped and escaped as every boundary error quotes a model, since this one is relayed to it.
function invalid(detail: string): ToolArgumentsError {
  return new ToolArgumentsError(
    `Tool-call arguments rejected: ${clipText(detail)}. The tool was not called; ask the model to send a JSON object.`,
  )
}

/** Whether `JSON.parse` may have lost something the key needs: a number at or beyond 2^53, or -0. */
function needsExactParse(v: unknown): boolean {
  if (typeof v === "number") return v >= TWO_53 || v <= -TWO_53 || (v === 0 && Object.is(v, -0))
  if (v === null || typeof v !== "object") return false
  if (Array.isArray(v)) {
    for (const x of v) if (needsExactParse(x)) return true
    return false
  }
  for (const k in v) if (needsExactParse((v as Record<string, unknown>)[k])) return true
  return false
}
