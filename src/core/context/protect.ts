import { unboxPrimitive } from "../boxed-number.ts"
import { InvalidOptionError } from "../errors.ts"
import { ContextGuardConfigError } from "./errors.ts"
import { activeCache, type SessionBindable } from "./session.ts"
import { assertClock, assertTtl, type SecondsClock, type ToolCache } from "./tool-cache.ts"

/** Options for {@link protect}. */
export interface ProtectOptions<A> {
  /** Argument naming the entity (e.g. `"customerId"`); each entity gets its own cache entry. */
  entityParam?: keyof A & string
  /** Seconds a result stays fresh. Default 300 (the original's default). */
  ttl?: number
  /** Clock in seconds used for expiry; defaults to the cache's clock. */
  clock?: SecondsClock
  /**
   * Cache key namespace, shared by every protect() given the same name. Defaults to `fn.name`, kept apart per
   * protect() call. Required for anonymous functions.
   */
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
      "protect() needs a tool name: pass a named function or { name: 'my_tool' }",
    )
  }
  const { entityParam } = options
  const clock = assertClock(options.clock)
  // Two modules' `async function get` must not read each other's entries (the original keyed by bare name).
  const ns = options.name ?? [toolName, ++unnamed]
  const cacheKey = (args: A): string => {
    if (entityParam !== undefined) {
      if (args == null)
        throw new InvalidOptionError(
          `protect(): ${toolName} got ${args}; pass an object with "${entityParam}"`,
        )
      // A boxed Number (parseToolArguments' `1e16`) has no keys: every one was the entity "{}".
      const entity = unboxPrimitive((args as Record<string, unknown>)[entityParam])
      if (entity !== undefined && entity !== null) {
        // Ids keep their string form ("42" and 42 are one entity); a structured entity gets its own namespace,
        // so the array ["a"] and the string '["a"]' do not share an entry.
        return typeof entity === "object"
          ? JSON.stringify([ns, "entity-json", stableStringify(entity)])
          : JSON.stringify([ns, "entity", keyPart(entity)])
      }
    }
    return JSON.stringify([ns, "args", keyPart(args)])
  }
  // Extra arguments (a ledger's TransitionContext, when mycelium.yaml stacks guards) reach fn on a miss.
  const inner = fn as (args: A, ...rest: unknown[]) => R | Promise<R>
  // async: arguments that cannot be keyed reject the call's promise, as any other failure of the call does.
  const withCache = async (cache: ToolCache, args: A, ...rest: unknown[]): Promise<R> =>
    await cache.getOrLoad(cacheKey(args), ttl, () => inner(args, ...rest), clock)
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

// Numbers the protect() calls without `name`, so each gets its own namespace.
let unnamed = 0

// Stable across key order so {a,b} and {b,a} hit the same entry; entity ids keep their string form so
// "42" and 42 address the same entity.
function keyPart(value: unknown): string {
  // A number is spelled as its text too (JSON writes NaN and ±Infinity as null, which made them one entity with the
  // id "null"); a string alone is not quoted.
  return typeof value === "string" ? value : stableStringify(value)
}

/** Spells out one value: yields each item it holds, is sent back that item's text, and returns its own. */
type Spelling = Generator<unknown, string, string>

// A Date has no own keys: every date would be "{}" and share one entry. Use what JSON would send (toJSON),
// and spell out Maps and Sets, which have no keys either.
function* spell(value: unknown, open: Set<object>): Spelling {
  let v = value
  for (let hops = 0; hops < 8 && typeof v === "object" && !Array.isArray(v); hops++) {
    // null has no toJSON either.
    const toJSON = (v as { toJSON?: unknown } | null)?.toJSON
    if (typeof toJSON !== "function") break
    v = toJSON.call(v)
  }
  v = unboxPrimitive(v)
  // Its text, as an entity id's: JSON writes NaN and ±Infinity as null, the key of the argument null. A bigint too,
  // as Python's str() spells an int: spelled "123n", the id "123n" shared the bigint 123n's entry.
  if (typeof v === "number" || typeof v === "bigint") return String(v)
  // What JSON cannot write (undefined, a symbol, a function) is its String() text: "undefined" for undefined.
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? String(v)
  // The caller's object, not what its toJSON made: a fresh wrapper each time would hide a cycle through it.
  const src = value as object
  // The objects being spelled out: one met again inside itself is a cycle, which would never end (JSON throws).
  if (open.has(src))
    throw new InvalidOptionError(
      "protect(): arguments with a cycle or a class instance have no cache key; pass JSON-like ones",
    )
  open.add(src)
  // The items' texts (a list in a template literal is written joined by commas).
  const parts: string[] = []
  let text: string
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) parts.push(yield v[i])
    text = `[${parts}]`
  } else if (v instanceof Map) {
    // Maps and Sets are ordered by text, not insertion. A key is found by its type too: 1n is not the key 1.
    for (const e of [...v]) parts.push(`${yield e[0]}${typeof e[0] === "bigint" ? "n" : ""}=>${yield e[1]}`)
    text = `Map(${parts.sort()})`
  } else if (v instanceof Set) {
    for (const x of [...v]) parts.push(`${yield x}${typeof x === "bigint" ? "n" : ""}`)
    text = `Set(${parts.sort()})`
  } else {
    // Read by its own keys, an object whose data sits elsewhere (a class's getters or private fields, inherited
    // members, a URLSearchParams) keyed as "{}": one customer's record was served for another's. The ledger's rule for
    // arguments (inline in canonical.ts's convert(), no helper to share), but Maps, Sets and toJSON() stay keyable.
    const proto = Object.getPrototypeOf(v)
    if (proto && proto !== Object.prototype)
      throw new InvalidOptionError(
        "protect(): arguments with a cycle or a class instance have no cache key; pass JSON-like ones",
      )
    const obj = v as Record<string, unknown>
    // A key is a string, which JSON writes. Every member is read before any is spelled out, as Map entries are.
    for (const [k, x] of Object.keys(obj)
      .sort()
      .map((k) => [k, obj[k]] as const))
      parts.push(`${JSON.stringify(k)}:${yield x}`)
    text = `{${parts}}`
  }
  open.delete(src)
  return text
}

// Iterative: arguments a model nested thousands of levels deep overflowed the recursive version's stack. Each
// value's generator waits on a stack of our own while its items are spelled out.
function stableStringify(value: unknown): string {
  const open = new Set<object>()
  const stack = [spell(value, open)]
  // The text of the item spelled out last, sent to the generator that yielded it (a fresh one ignores it).
  let text = ""
  for (;;) {
    const step = (stack[stack.length - 1] as Spelling).next(text)
    if (!step.done) stack.push(spell(step.value, open))
    else {
      stack.pop()
      text = step.value
      if (!stack.length) return text
    }
  }
}
