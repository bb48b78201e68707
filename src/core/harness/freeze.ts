/** Freezes a plain data tree in place, so a snapshot handed out cannot change later. */
export function deepFreeze<T>(value: T, seen = new WeakSet<object>()): T {
  // Each object once: a cycle (a client's reply that refers to itself) recursed without end. Frozen ones are walked
  // too, since freezing is shallow: a frozen object may hold arrays that are not.
  if (value === null || typeof value !== "object" || seen.has(value)) return value
  seen.add(value)
  Object.freeze(value)
  for (const v of Object.values(value as Record<string, unknown>)) deepFreeze(v, seen)
  return value
}
