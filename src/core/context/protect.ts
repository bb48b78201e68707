import { ContextGuardConfigError } from "./errors.ts"
import { activeCache, type SessionBindable } from "./session.ts"
import { assertTtl, type SecondsClock, type ToolCache } from "./tool-cache.ts"

/** Options for {@link protect}. */
export interface ProtectOptions<A> {
  /** Argument naming the entity (e.g. `"customerId"`); each entity gets its own cache entry. */
  entityParam?: keyof A & string
  /** Seconds a result stays fresh. Default 300 (the original's default). */
  ttl?: number
  /** Clock in seconds used for expiry; defaults to the cache's clock. */
  clock?: SecondsClock
  /** Cache key namespace; defaults to `fn.name`. Required for anonymous functions. */
  name?: string
}

/** A function wrapped by {@link protect}. */
export interface ProtectedTool<A, R> extends SessionBindable<A, R> {
  (args: A): Promise<R>
  readonly toolName: string
  /** Drops the cached entry these arguments map to, in the active session (or the default cache). */
  invalidate(args: A): void
  /** The key these arguments map to (stable across calls). */
  cacheKey(args: A): string
}

/**
 * Wraps a tool in a per-entity TTL cache. Concurrent misses for one key share a single call; an error
 * clears the key; `null`/`undefined` results are cached. Without `entityParam` the key covers all the
 * arguments (the original cached one value for every argument set).
 */
export function protect<A extends object, R>(
  fn: (args: A) => R | Promise<R>,
  options: ProtectOptions<A> = {},
): ProtectedTool<A, R> {
  const ttl = options.ttl ?? 300
  assertTtl(ttl)
  const toolName = options.name ?? fn.name
  if (!toolName) {
    throw new ContextGuardConfigError(
      "protect() needs a tool name to build cache keys: pass a named function or { name: 'my_tool' }.",
    )
  }
  const { entityParam, clock } = options
  const cacheKey = (args: A): string => {
    if (entityParam !== undefined) {
      const entity = (args as Record<string, unknown>)[entityParam]
      if (entity !== undefined && entity !== null) {
        // Ids keep their string form ("42" and 42 are one entity); a structured entity gets its own namespace,
        // so the array ["a"] and the string '["a"]' do not share an entry.
        return typeof entity === "object"
          ? JSON.stringify([toolName, "entity-json", stableStringify(entity)])
          : JSON.stringify([toolName, "entity", keyPart(entity)])
      }
    }
    return JSON.stringify([toolName, "args", keyPart(args)])
  }
  // Extra arguments (a ledger's TransitionContext, when mycelium.yaml stacks guards) reach fn on a miss.
  const inner = fn as (args: A, ...rest: unknown[]) => R | Promise<R>
  const withCache = (cache: ToolCache, args: A, ...rest: unknown[]): Promise<R> =>
    cache.getOrLoad(cacheKey(args), ttl, () => inner(args, ...rest), clock)
  const wrapped = ((args: A, ...rest: unknown[]) => withCache(activeCache(), args, ...rest)) as ProtectedTool<
    A,
    R
  >
  Object.defineProperties(wrapped, {
    toolName: { value: toolName },
    withCache: { value: withCache },
    cacheKey: { value: cacheKey },
    invalidate: { value: (args: A) => activeCache().delete(cacheKey(args)) },
  })
  return wrapped
}

// Stable across key order so {a,b} and {b,a} hit the same entry; entity ids keep their string form so
// "42" and 42 address the same entity.
function keyPart(value: unknown): string {
  if (typeof value === "string") return value
  return stableStringify(value)
}

function stableStringify(value: unknown): string {
  if (value === undefined) return "undefined"
  if (typeof value === "bigint") return `${value}n`
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? String(value)
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(",")}]`
  // A Date has no own keys: every date would be "{}" and share one entry. Use what JSON would send (toJSON),
  // and spell out Maps and Sets, which have no keys either.
  const toJSON = (value as { toJSON?: unknown }).toJSON
  if (typeof toJSON === "function") return stableStringify(toJSON.call(value))
  if (value instanceof Map)
    return `Map(${[...value]
      .map(([k, v]) => `${stableStringify(k)}=>${stableStringify(v)}`)
      .sort()
      .join(",")})`
  if (value instanceof Set) return `Set(${[...value].map(stableStringify).sort().join(",")})`
  const obj = value as Record<string, unknown>
  const keys = Object.keys(obj).sort()
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stableStringify(obj[k])}`).join(",")}}`
}
