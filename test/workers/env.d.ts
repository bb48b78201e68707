// Test-only view of workerd's `env` export; the bindings come from wrangler.toml.
declare module "cloudflare:workers" {
  export const env: Readonly<Record<string, unknown>>
}

// workerd provides node:async_hooks under the nodejs_compat flag; Node's own typings are not loaded here.
declare module "node:async_hooks" {
  export class AsyncLocalStorage<T> {
    getStore(): T | undefined
    run<R>(store: T, fn: () => R): R
  }
}
