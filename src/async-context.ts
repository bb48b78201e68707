// Side-effect entry: importing it makes Session.run() propagate across `await` via node:async_hooks, which
// Node, Deno, Bun and Cloudflare Workers (with the nodejs_compat flag) all provide. Kept out of src/core so
// the core still bundles for browsers.
import { AsyncLocalStorage } from "node:async_hooks"
import { configureAsyncContext } from "./core/context/async-context.ts"

configureAsyncContext(AsyncLocalStorage)

export { configureAsyncContext, hasAsyncContext } from "./core/context/async-context.ts"
