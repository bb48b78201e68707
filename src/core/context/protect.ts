import { unboxNumber } from "../boxed-number.ts"
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
      const entity = unboxNumber((args as Record<string, unknown>)[entityParam])
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
  // A number's text too: JSON writes NaN and ±Infinity as null, which made them one entity with the id "null".
  if (typeof value === "string" || typeof value === "number") return String(value)
  return stableStringify(value)
}

// A value being spelled out. Map entries and object members are queued as frames too: a class of this module's own,
// so a caller's object is never taken for one.
class Frame {
  readonly parts: string[] = []
  constructor(
    readonly items: unknown[],
    readonly open: string,
    readonly close: string,
    /** The object the frame spells out (a member's or Map entry's own pair), to find a cycle. */
    readonly src: object,
    readonly sep = ",",
    /** Maps and Sets: order by text, not insertion. */
    readonly sort = false,
  ) {}
}

/** A Map entry (`k=>v`) or an object member (`"k":v`, its key a string, which JSON writes). */
const pairFrame = (pair: unknown[], sep: string): Frame => new Frame(pair, "", "", pair, sep)

// A Date has no own keys: every date would be "{}" and share one entry. Use what JSON would send (toJSON),
// and spell out Maps and Sets, which have no keys either.
function leafOrFrame(value: unknown): string | Frame {
  let v = value
  for (let hops = 0; hops < 8 && typeof v === "object" && v !== null && !Array.isArray(v); hops++) {
    const toJSON = (v as { toJSON?: unknown }).toJSON
    if (typeof toJSON !== "function") break
    v = toJSON.call(v)
  }
  v = unboxNumber(v)
  if (v === undefined) return "undefined"
  if (typeof v === "bigint") return `${v}n`
  // Its text, as an entity id's: JSON writes NaN and ±Infinity as null, the key of the argument null.
  if (typeof v === "number") return String(v)
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? String(v)
  // src is the caller's object, not what its toJSON made: a fresh wrapper each time would hide a cycle through it.
  const src = value as object
  if (Array.isArray(v)) return new Frame(v, "[", "]", src)
  if (v instanceof Map)
    return new Frame(
      [...v].map((e) => pairFrame(e, "=>")),
      "Map(",
      ")",
      src,
      ",",
      true,
    )
  if (v instanceof Set) return new Frame([...v], "Set(", ")", src, ",", true)
  const obj = v as Record<string, unknown>
  return new Frame(
    Object.keys(obj)
      .sort()
      .map((k) => pairFrame([k, obj[k]], ":")),
    "{",
    "}",
    src,
  )
}

// Iterative: arguments a model nested thousands of levels deep overflowed the recursive version's stack.
function stableStringify(value: unknown): string {
  const first = leafOrFrame(value)
  if (typeof first === "string") return first
  const stack: Frame[] = [first]
  // The objects being spelled out: one met again inside itself is a cycle, which would never end (JSON throws).
  const open = new Set([first.src])
  for (;;) {
    const top = stack[stack.length - 1] as Frame
    if (top.parts.length < top.items.length) {
      const child = top.items[top.parts.length]
      // A Map entry or an object member is a frame already; anything else is classified now.
      const next = child instanceof Frame ? child : leafOrFrame(child)
      if (typeof next === "string") top.parts.push(next)
      else {
        if (open.has(next.src))
          throw new InvalidOptionError(
            "protect(): arguments with a cycle have no cache key; pass JSON-like ones",
          )
        open.add(next.src)
        stack.push(next)
      }
      continue
    }
    if (top.sort) top.parts.sort()
    const text = `${top.open}${top.parts.join(top.sep)}${top.close}`
    stack.pop()
    open.delete(top.src)
    const parent = stack[stack.length - 1]
    if (!parent) return text
    parent.parts.push(text)
  }
}
