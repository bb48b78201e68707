/**
 * The number a boxed Number holds (`parseToolArguments` keeps a float the text wrote as `1e16` as one), else the
 * value itself. Read from the object's internal slot: an object posing as a Number, a Proxy, or a subclass's own
 * `valueOf` never runs, and a check that takes it passes the tool this primitive, not the object.
 */
export function unboxNumber(value: unknown): unknown {
  try {
    // instanceof first: a throw for each string or array asked about made a million-item check 20 times slower. In
    // the try: a Proxy's getPrototypeOf trap may throw.
    return value instanceof Number ? Number.prototype.valueOf.call(value) : value
  } catch {
    return value
  }
}

/**
 * The value any boxed primitive holds (Number, Boolean, String, BigInt), else the value itself, read from its slot as
 * unboxNumber reads a Number's. protect() keys by it: a box has no keys, so new Boolean(true) and new Boolean(false)
 * keyed alike. unboxNumber stays its own for the ledger's hot path (one instanceof, no loop).
 */
export function unboxPrimitive(v: unknown): unknown {
  if (typeof v === "object")
    try {
      for (const B of [Number, Boolean, String, BigInt])
        if (v instanceof B) return (B.prototype.valueOf as () => unknown).call(v)
    } catch {}
  return v
}
