// jose checks `iat` only when maxTokenAge is set; jwtAuth refuses a token "issued" in the future without it too
// (forged, or from an issuer with a broken clock).
import { SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp, jwtAuth } from "../../src/edge/index.ts"

const SECRET = "future-iat-secret-future-iat-01234567"
const key = new TextEncoder().encode(SECRET)

describe("jwtAuth without maxTokenAge", () => {
  const app = createLedgerApp({
    storage: new MemoryLedgerStorage(),
    authenticate: jwtAuth({ secret: SECRET }),
  })
  const get = (token: string) =>
    app.request("/v1/transitions", { headers: { authorization: `Bearer ${token}` } })
  const base = () => new SignJWT({ tenant: "t", scope: "ledger:reader" }).setProtectedHeader({ alg: "HS256" })

  it("refuses a token whose iat is a day ahead (401), takes one issued now", async () => {
    const now = Math.floor(Date.now() / 1000)
    const ahead = await get(
      await base()
        .setIssuedAt(now + 86400)
        .setExpirationTime(now + 2 * 86400)
        .sign(key),
    )
    expect(ahead.status).toBe(401)
    expect(((await ahead.json()) as { error: { code: string } }).error.code).toBe("unauthorized")
    expect(
      (
        await get(
          await base()
            .setIssuedAt(now)
            .setExpirationTime(now + 300)
            .sign(key),
        )
      ).status,
    ).toBe(200)
  })
})
