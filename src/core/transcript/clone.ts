// Deep-copies plain objects (null-prototype ones and another realm's too) and arrays only: class instances (URL,
// Uint8Array, Date) in multimodal parts are shared, which structuredClone would reject or alter. Iterative, because
// a model can nest tool input thousands of levels deep (10 KB of brackets overflowed the recursive version's stack),
// and keys are defined, not assigned, so a "__proto__" key JSON.parse made an own key stays one instead of becoming
// the prototype.
import { defineOwn } from "../own.ts"
export function clonePlain<T>(value: T): T {
  const shell = (v: unknown): unknown => (Array.isArray(v) ? new Array(v.length) : isPlainObject(v) ? {} : v)
  const root = shell(value)
  if (root === value) return value
  const stack: [unknown, Record<string, unknown>][] = [[value, root as Record<string, unknown>]]
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [src, dst] = top
    for (const [k, v] of Object.entries(src as Record<string, unknown>)) {
      const copy = shell(v)
      defineOwn(dst, k, copy)
      if (copy !== v) stack.push([v, copy as Record<string, unknown>])
    }
  }
  return root as T
}

/**
 * True when a plain object or array in `value` holds itself, which JSON cannot send and clonePlain would copy
 * forever. Iterative like clonePlain; an object shared by two branches is no cycle.
 */
export function hasCycle(value: unknown): boolean {
  const open = new Set<unknown>()
  const todo: [unknown, boolean][] = [[value, false]]
  for (let top = todo.pop(); top; top = todo.pop()) {
    const [v, leaving] = top
    if (leaving) open.delete(v)
    // The root too when it is a class instance: repair() copies a message's own fields whatever its class.
    else if (Array.isArray(v) || isPlainObject(v) || v === value) {
      if (open.has(v)) return true
      open.add(v)
      todo.push([v, true])
      for (const x of Object.values(v as object)) todo.push([x, false])
    }
  }
  return false
}

// A vm context's or an iframe's Object.prototype is not ours, but it too has no prototype.
const isPlainObject = (v: unknown): boolean =>
  typeof v === "object" && v !== null && !Object.getPrototypeOf(Object.getPrototypeOf(v) ?? Object.prototype)

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
}
