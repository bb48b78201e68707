// jwtAuth's shared secret holding an unpaired surrogate: UTF-8 writes it as U+FFFD, so the secret was another one's
// and verified its tokens. (LEDGER_RECEIPT_JWK's kid is sound: a JWS header is JSON, which escapes it.)
import { SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { InvalidOptionError } from "../../src/core/errors.ts"
import { jwtAuth } from "../../src/edge/auth.ts"

describe("a jwtAuth secret holding an unpaired surrogate", () => {
  it("is refused with InvalidOptionError; the U+FFFD secret it turned into works as before", async () => {
    const secret = "a-shared-secret-of-32-bytes-or-more-"
    for (const lone of [`${secret}\ud800`, `\udfff${secret}`]) {
      expect(() => jwtAuth({ secret: lone })).toThrow(InvalidOptionError)
      expect(() => jwtAuth({ secret: lone })).toThrow("unpaired surrogate")
    }
    const token = await new SignJWT({ tenant: "t" })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("s")
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(`${secret}\ufffd`))
    expect(await jwtAuth({ secret: `${secret}\ufffd` })(`Bearer ${token}`)).toMatchObject({ tenant: "t" })
  })
})
