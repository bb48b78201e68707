// jwtAuth's jwksUrl once went straight to `new URL()`: a relative or mistyped URL threw a bare TypeError ("Invalid URL
// string."), and a non-http one (file:, ftp:) was accepted and failed every request later as auth_unavailable.
import { describe, expect, it } from "vitest"
import { InvalidOptionError } from "../../src/core/index.ts"
import { jwtAuth } from "../../src/edge/auth.ts"

describe("jwtAuth jwksUrl", () => {
  it("refuses what is not an absolute http(s) URL with an InvalidOptionError naming jwksUrl", () => {
    for (const jwksUrl of [
      "not a url",
      "/jwks.json",
      "file:///etc/jwks.json",
      "ftp://idp.example/jwks.json",
    ]) {
      expect(() => jwtAuth({ jwksUrl }), jwksUrl).toThrow(InvalidOptionError)
      expect(() => jwtAuth({ jwksUrl }), jwksUrl).toThrow(/jwksUrl must be the absolute http\(s\) URL/)
    }
    expect(() => jwtAuth({ jwksUrl: "http://127.0.0.1:9/jwks.json" })).not.toThrow()
    expect(() => jwtAuth({ jwksUrl: "https://idp.example/.well-known/jwks.json" })).not.toThrow()
  })
})
