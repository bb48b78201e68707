// The core cannot import node:async_hooks (it must bundle for browsers and edge runtimes), so the
// AsyncLocalStorage class is injected: `mycelium-runtime/async-context` registers Node's, and runtimes that
// expose it as a global get it without any set-up.

/** The part of `AsyncLocalStorage` the context guards use. */
export interface AsyncLocalStorageLike<T> {
  getStore(): T | undefined
  run<R>(store: T, fn: () => R): R
}

/** A constructor compatible with `AsyncLocalStorage` from `node:async_hooks`. */
export type AsyncLocalStorageClass = new <T>() => AsyncLocalStorageLike<T>

let configured: AsyncLocalStorageClass | undefined

/**
 * Registers the runtime's `AsyncLocalStorage` so that `Session.run()` propagates across `await`.
 * Call it once at start-up, before any session runs (the `async-context` entry does this for Node, Deno, Bun and
 * Workers with `nodejs_compat`): all sessions share one storage of the current class, so a run in progress when
 * the class changes loses its session, and its later calls use the default cache.
 */
export function configureAsyncContext(als: AsyncLocalStorageClass | undefined): void {
  configured = als
}

/** The registered class, or a global `AsyncLocalStorage` if the runtime provides one, else undefined. */
export function asyncContextClass(): AsyncLocalStorageClass | undefined {
  if (configured) return configured
  const g = (globalThis as { AsyncLocalStorage?: AsyncLocalStorageClass }).AsyncLocalStorage
  return typeof g === "function" ? g : undefined
}

/** True when sessions propagate implicitly across `await` in this runtime. */
export function hasAsyncContext(): boolean {
  return asyncContextClass() !== undefined
}
