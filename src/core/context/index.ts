export {
  type AsyncLocalStorageClass,
  type AsyncLocalStorageLike,
  configureAsyncContext,
  hasAsyncContext,
} from "./async-context.ts"
export { ContextGuardConfigError } from "./errors.ts"
export { type ProtectedTool, type ProtectOptions, protect } from "./protect.ts"
export { defaultCache, Session, type SessionBindable, type SessionOptions } from "./session.ts"
export { type SecondsClock, ToolCache, type ToolCacheOptions } from "./tool-cache.ts"
