// Deep-copies plain objects and arrays only: class instances (URL, Uint8Array, Date) in multimodal parts
// are shared, which structuredClone would reject or alter.
export function clonePlain<T>(value: T): T {
  if (Array.isArray(value)) return value.map(clonePlain) as T
  if (value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = clonePlain(v)
    return out as T
  }
  return value
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
}

/**
 * `String(value)` that cannot throw: JSON.parse('{"toString": 1}') and Object.create(null) have no usable
 * toString, and String() on them throws a TypeError out of a guard that should report or repair instead.
 */
export function safeString(value: unknown): string {
  try {
    return String(value)
  } catch {
    return Object.prototype.toString.call(value)
  }
}
