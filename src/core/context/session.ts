import { type AsyncLocalStorageLike, asyncContextClass } from "./async-context.ts"
import { ToolCache } from "./tool-cache.ts"

/** Options for {@link Session}. */
export interface SessionOptions {
  /** Use this cache instead of a fresh one (e.g. to share a clock in tests). */
  cache?: ToolCache
}

let storage: AsyncLocalStorageLike<Session> | undefined
let storageClass: unknown
// Fallback when no AsyncLocalStorage exists: the session is current only during the synchronous part of
// run(); after the first `await` inside it, protected calls fall back to the default cache.
let syncCurrent: Session | undefined

function als(): AsyncLocalStorageLike<Session> | undefined {
  const cls = asyncContextClass()
  if (cls !== storageClass) {
    storageClass = cls
    storage = cls && new cls<Session>()
  }
  return storage
}

/** The process-wide cache used by protected tools called outside any session. */
export const defaultCache = new ToolCache()

/**
 * One agent run's private tool cache. Everything called inside `session.run(fn)` uses it: implicitly
 * across `await` where AsyncLocalStorage is available, and only synchronously otherwise (browsers); use
 * `session.bind(tool)` to pin a protected tool to this session in every runtime.
 */
export class Session {
  readonly cache: ToolCache

  constructor(options: SessionOptions = {}) {
    this.cache = options.cache ?? new ToolCache()
  }

  /** The innermost active session, if any. */
  static current(): Session | undefined {
    return als()?.getStore() ?? syncCurrent
  }

  /** Runs `fn` with this session active; nested runs restore the outer session when they finish. */
  run<R>(fn: (session: Session) => R): R {
    const a = als()
    if (a) return a.run(this, () => fn(this))
    const previous = syncCurrent
    syncCurrent = this
    try {
      return fn(this)
    } finally {
      syncCurrent = previous
    }
  }

  /**
   * Returns `tool` bound to this session's cache, independent of the ambient context. The call runs inside this
   * session, so protected tools it calls use the cache too (only up to its first `await` without AsyncLocalStorage).
   */
  bind<A, R>(tool: SessionBindable<A, R>): (args: A) => Promise<R> {
    // Not the cache alone: a protected tool called inside used the default cache, and served one session's value
    // to another.
    return (args: A) => this.run(() => tool.withCache(this.cache, args))
  }
}

/** A protected tool that can be pinned to a session's cache. */
export interface SessionBindable<A, R> {
  withCache(cache: ToolCache, args: A): Promise<R>
}

/** The cache a protected call should use right now. */
export function activeCache(): ToolCache {
  return Session.current()?.cache ?? defaultCache
}
