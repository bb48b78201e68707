// jwtAuth's options and the claims it reads. An operator's `sub` became a release's `by` unchecked (NUL or half an
// emoji reached the store: Postgres answered 503 as if it were down); a `key: createRemoteJWKSet(url)` that was down
// was 401 "invalid token: fetch failed"; NaN or negative seconds and a one-byte secret built a verifier; scopes split
// on any Unicode space and flattened nested arrays; a token over the length cap was told it sent none.
import { createRemoteJWKSet, errors as joseErrors, SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { InvalidOptionError, MemoryLedgerStorage } from "../../src/core/index.ts"
import { type AuthError, createLedgerApp, jwtAuth } from "../../src/edge/index.ts"

const SECRET = "test-secret-with-enough-entropy-0123456789"
const sign = (claims: Record<string, unknown>, secret = SECRET) =>
  new SignJWT({ tenant: "acme", ...claims })
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("5m")
    .sign(new TextEncoder().encode(secret))
const auth = jwtAuth({ secret: SECRET })
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: AuthError) => [e.code, e.message],
  )

describe("jwtAuth subject", () => {
  it("cuts a long sub between code points and refuses one holding NUL or an unpaired surrogate", async () => {
    const long = await auth(`Bearer ${await sign({ sub: `${"o".repeat(127)}\u{1F600}` })}`)
    expect(long.subject).toBe("o".repeat(127))
    for (const sub of ["ops\u0000bob", "ops\ud800", "\udc00ops"]) {
      const r = await refusal(auth(`Bearer ${await sign({ sub })}`))
      expect(r?.[0], JSON.stringify(sub)).toBe("unauthorized")
      expect(r?.[1]).toContain("'sub'")
    }
  })

  it("a release by an operator whose sub is not text is 401 before the route runs", async () => {
    const storage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage: () => storage, authenticate: auth })
    const op = await sign({ sub: "ops\u0000bob", scope: "ledger:operator" })
    const r = await app.request("/v1/transitions/x/release", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${op}` },
      body: JSON.stringify({ verified: "not_executed", reason: "checked the provider" }),
    })
    expect(r.status).toBe(401)
  })
})

describe("jwtAuth key resolver failures", () => {
  it("key: createRemoteJWKSet of a key set that is down is 503 auth_unavailable, like jwksUrl", async () => {
    // Any token will do: the key set is fetched before the token's alg or kid is looked up in it.
    const jwt = await sign({})
    const down = jwtAuth({ key: createRemoteJWKSet(new URL("http://127.0.0.1:9/jwks.json")) })
    const r = await refusal(down(`Bearer ${jwt}`))
    expect(r?.[0]).toBe("auth_unavailable")
    expect(r?.[1]).not.toContain("fetch failed")
  })

  it("a resolver's own error is 503 without its text; a jose token error from it stays 401", async () => {
    const jwt = await sign({})
    const boom = jwtAuth({
      key: async () => {
        throw new Error("connect ECONNREFUSED 10.0.0.7:443")
      },
    })
    expect(await refusal(boom(`Bearer ${jwt}`))).toEqual([
      "auth_unavailable",
      "the token's key set could not be fetched; retry shortly",
    ])
    const noKey = jwtAuth({
      key: async () => {
        throw new joseErrors.JWKSNoMatchingKey()
      },
    })
    expect((await refusal(noKey(`Bearer ${jwt}`)))?.[0]).toBe("unauthorized")
  })
})

describe("jwtAuth options", () => {
  it("refuses seconds that are not finite, a negative tolerance and a token age not > 0 when built", () => {
    const bad: Array<Record<string, unknown>> = [
      { clockTolerance: Number.NaN },
      { clockTolerance: -5 },
      { clockTolerance: Number.POSITIVE_INFINITY },
      { clockTolerance: "30" },
      { maxTokenAge: Number.NaN },
      { maxTokenAge: 0 },
      { maxTokenAge: -1 },
    ]
    for (const o of bad) {
      expect(() => jwtAuth({ secret: SECRET, ...o }), JSON.stringify(o)).toThrow(InvalidOptionError)
      // With a key set the same fault once answered every token 503, as if the key set were down.
      expect(() => jwtAuth({ jwksUrl: "http://127.0.0.1:9/jwks.json", ...o })).toThrow(InvalidOptionError)
    }
    expect(() => jwtAuth({ secret: SECRET, clockTolerance: 0, maxTokenAge: 1 })).not.toThrow()
  })

  it("refuses an HS256 secret under 32 bytes (RFC 7518 §3.2), counted in UTF-8", async () => {
    for (const secret of ["", "a", "x".repeat(31), new Uint8Array(31)])
      expect(() => jwtAuth({ secret }), String(secret.length)).toThrow(/at least 32 bytes/)
    const s = "é".repeat(16) // 16 characters, 32 bytes
    const a = jwtAuth({ secret: s })
    expect((await a(`Bearer ${await sign({ scope: "ledger:reader" }, s)}`)).tenant).toBe("acme")
    expect(() => jwtAuth({ secret: new Uint8Array(32) })).not.toThrow()
  })
})

describe("jwtAuth scopes and token length", () => {
  const scopes = async (claims: Record<string, unknown>) =>
    [...(await auth(`Bearer ${await sign(claims)}`)).scopes].sort()

  it("splits a scope string on U+0020 only; an array grants only its string entries", async () => {
    expect(await scopes({ scope: "openid  ledger:store ledger:agent" })).toEqual(["agent", "store"])
    for (const sep of ["\u00a0", "\u3000", "\u2028", "\t", "\n"])
      expect(await scopes({ scope: `profile${sep}ledger:store` }), JSON.stringify(sep)).toEqual([])
    expect(await scopes({ scope: [["ledger:store"]] })).toEqual([])
    expect(await scopes({ scopes: [{ toString: "ledger:store" }, 1, "ledger:agent"] })).toEqual(["agent"])
  })

  it("a token over 8192 characters is 401 saying it is too long, not that none was sent", async () => {
    const big = await sign({ scope: "ledger:store", pad: "p".repeat(6700) })
    expect(big.length).toBeGreaterThan(8192)
    const r = await refusal(auth(`Bearer ${big}`))
    expect(r?.[0]).toBe("unauthorized")
    expect(r?.[1]).toMatch(/over 8192 characters/)
  })
})

describe("jwtAuth tenant", () => {
  it("takes only a string of [A-Za-z0-9_.-]{1,128} that is not a path step; __proto__ is a tenant like any", async () => {
    const tenantOf = async (tenant: unknown) => {
      try {
        return (await auth(`Bearer ${await sign({ tenant })}`)).tenant
      } catch (e) {
        return (e as AuthError).code
      }
    }
    const notText = [5, ["acme"], { acme: 1 }]
    const refused = [...notText, "", ".", "..", "../acme", "acme/x", "a:b", "a".repeat(129), "acme\n"]
    for (const tenant of refused) expect(await tenantOf(tenant), JSON.stringify(tenant)).toBe("forbidden")
    for (const tenant of ["__proto__", "...", ".acme", "a..b", "a".repeat(128)])
      expect(await tenantOf(tenant)).toBe(tenant)
  })
})
