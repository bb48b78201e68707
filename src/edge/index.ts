export { createLedgerApp, HttpError, type LedgerAppOptions } from "./app.ts"
export { AuthError, type JwtAuthOptions, jwtAuth, type LedgerScope, type Principal } from "./auth.ts"
