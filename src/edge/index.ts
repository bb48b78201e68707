export { createLedgerApp, type LedgerAppOptions } from "./app.ts"
export {
  AuthError,
  type AuthErrorCode,
  type JwtAuthOptions,
  jwtAuth,
  type LedgerScope,
  type Principal,
} from "./auth.ts"
export { type BodyLimits, DEFAULT_BODY_LIMITS } from "./body.ts"
export type { AppEnv, TenantReceipts } from "./context.ts"
export { HttpError } from "./errors.ts"
export { DOCUMENTED_ROUTES, openApiDocument } from "./openapi.ts"
export { type ErrorBody, type HttpStatus, statusForCode } from "./status.ts"
