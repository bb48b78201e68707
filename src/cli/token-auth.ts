// `--token T` for the local API: every /v1 request must send `Authorization: Bearer T`. Loaded with the edge app
// (it needs jose through edge/auth.ts, an optional peer), never by the dispatcher.
import { AuthError, type LedgerScope, type Principal } from "../edge/auth.ts"

/** A verifier accepting exactly `Bearer <token>`, compared in constant time, with every scope. */
export function tokenAuth(token: string): (authorization: string | undefined) => Promise<Principal> {
  const expected = new TextEncoder().encode(`Bearer ${token}`)
  const all = new Set<LedgerScope>(["agent", "reader", "operator", "store"])
  return async (authorization) => {
    const got = new TextEncoder().encode(authorization ?? "")
    let diff = got.length ^ expected.length
    for (let i = 0; i < expected.length; i++) diff |= (got[i] ?? 0) ^ (expected[i] as number)
    if (diff !== 0) throw new AuthError("unauthorized", "send 'Authorization: Bearer <the --token value>'")
    return { tenant: "default", subject: "local", scopes: all }
  }
}
