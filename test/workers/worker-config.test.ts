// The worker entry's numeric variables, in workerd. LEDGER_SHARDS and LEDGER_JWT_MAX_AGE once went through Number():
// "4 shards" became 1 shard (rows written under 4 were not found, so a completed payment was handed out to run again)
// and "1h" became no token-age limit at all. Anything but a positive whole number is now 503 `misconfigured`.
import { env } from "cloudflare:workers"
import { describe, expect, it } from "vitest"
import { callWorker, signToken } from "./worker-fetch.ts"

const SECRET = "workerd-config-secret-workerd-config-secret"
const run = `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
const BAD = ["four", "3600s", "1 hour", "0", "00", "-5", "1.5", "0x10", "1e3", " 4", ""]

const token = (scope: string, issuedSecondsAgo = 0, tenant = run) =>
  signToken(SECRET, { tenant, scope }, { issuedSecondsAgo })

const call = (vars: Record<string, unknown>, jwt: string, method: string, path: string, body?: unknown) =>
  callWorker({ ...(env as object), LEDGER_JWT_SECRET: SECRET, ...vars }, jwt, method, path, body)

describe("worker LEDGER_SHARDS", () => {
  const begin = {
    tool: "send_payment",
    args: { amount: 100 },
    binding: { agent_id: "pay", policy_version: "1", side_effect_class: "keyed_mutate" },
    meta: { request_id: `pay-${run}` },
  }

  it("a completed call stays completed: a shard count that is not a positive integer is 503, never 1 shard", async () => {
    const jwt = await token("ledger:agent")
    const b = await call({ LEDGER_SHARDS: "4" }, jwt, "POST", "/v1/calls", begin)
    expect(b.json.status).toBe("run")
    const done = await call({ LEDGER_SHARDS: "4" }, jwt, "POST", `/v1/calls/pay-${run}/complete`, {
      fence: b.json.fence,
      lease: b.json.lease,
      result: { charge: "ch_1" },
    })
    expect(done.status).toBe(200)
    for (const shards of ["4 shards", "1h", ...BAD]) {
      const again = await call({ LEDGER_SHARDS: shards }, jwt, "POST", "/v1/calls", begin)
      const answer = again.json.error?.code ?? again.json.status
      expect([shards, again.status, answer]).toEqual([shards, 503, "misconfigured"])
      expect(again.json.error?.message).toContain("LEDGER_SHARDS")
    }
    // The same count written another way (a JSON number from wrangler `[vars]`, a leading zero) finds the row.
    for (const shards of [4, "04"]) {
      const again = await call({ LEDGER_SHARDS: shards }, jwt, "POST", "/v1/calls", begin)
      expect([again.status, again.json.status]).toEqual([200, "replay"])
    }
  })
})

describe("worker LEDGER_JWT_MAX_AGE", () => {
  it("a set value that is not whole seconds is 503 misconfigured, not a dropped limit", async () => {
    const old = await token("ledger:reader", 30 * 86400)
    for (const maxAge of ["1h", "4 shards", ...BAD]) {
      const r = await call({ LEDGER_JWT_MAX_AGE: maxAge }, old, "GET", "/v1/transitions")
      expect([maxAge, r.status, r.json.error?.code]).toEqual([maxAge, 503, "misconfigured"])
      expect(r.json.error?.message).toContain("LEDGER_JWT_MAX_AGE")
    }
  })

  it("seconds refuse an older token; unset keeps no maximum", async () => {
    // Not the tenant above: its rows are under 4 shards, and the store refuses a changed count.
    const old = await token("ledger:reader", 30 * 86400, `${run}-age`)
    for (const maxAge of ["3600", 3600]) {
      const r = await call({ LEDGER_JWT_MAX_AGE: maxAge }, old, "GET", "/v1/transitions")
      expect([r.status, r.json.error?.code]).toEqual([401, "unauthorized"])
    }
    const fresh = await call(
      { LEDGER_JWT_MAX_AGE: "3600" },
      await token("ledger:reader", 0, `${run}-age`),
      "GET",
      "/v1/transitions",
    )
    expect(fresh.status).toBe(200)
    expect((await call({}, old, "GET", "/v1/transitions")).status).toBe(200)
  })
})

describe("worker bindings and variables a deployment can get wrong", () => {
  it("a missing or wrong LEDGER binding is 503 misconfigured, on /health too, not a 500 on every call", async () => {
    const jwt = await token("ledger:agent")
    for (const ledger of [undefined, "oops", { get: async () => null }]) {
      for (const path of ["/health", "/v1/transitions"]) {
        const r = await call({ LEDGER: ledger }, jwt, "GET", path)
        expect([typeof ledger, path, r.status, r.json.error?.code]).toEqual([
          typeof ledger,
          path,
          503,
          "misconfigured",
        ])
        expect(r.json.error?.message).toContain("LEDGER must be a Durable Object binding")
      }
    }
  })

  it("LEDGER_SHARDS above 256 is 503 misconfigured naming the bound; 256 works", async () => {
    // Its own tenant: the one above keeps 4 shards, and a ledger's shard count never changes.
    const jwt = await token("ledger:reader", 0, `${run}-256`)
    for (const shards of ["257", "4294967296"]) {
      const r = await call({ LEDGER_SHARDS: shards }, jwt, "GET", "/v1/transitions")
      expect([shards, r.status, r.json.error?.code]).toEqual([shards, 503, "misconfigured"])
      expect(r.json.error?.message).toContain("LEDGER_SHARDS must be at most 256")
    }
    // /health: the bound is checked when the app is built; a first call over 256 cold objects takes seconds here.
    expect((await call({ LEDGER_SHARDS: "256" }, jwt, "GET", "/health")).status).toBe(200)
  })

  it("a LEDGER_JWT_SECRET under 32 bytes is 503 misconfigured naming it (never its value), not a guessable key", async () => {
    for (const secret of ["Zq", "short-secret-short-secret-31byt"]) {
      const r = await call(
        { LEDGER_JWT_SECRET: secret },
        await signToken(secret, { tenant: run }),
        "GET",
        "/health",
      )
      expect([secret, r.status, r.json.error?.code]).toEqual([secret, 503, "misconfigured"])
      expect(r.json.error?.message).toContain("LEDGER_JWT_SECRET must be at least 32 bytes")
      expect(r.json.error?.message).not.toContain(secret)
    }
  })

  it("a LEDGER_JWKS_URL that is not an absolute http(s) URL is named in the 503, not 'Invalid URL string.'", async () => {
    const jwt = await token("ledger:agent")
    for (const url of ["not a url", "/jwks.json", "file:///etc/jwks.json"]) {
      const r = await call(
        { LEDGER_JWT_SECRET: undefined, LEDGER_JWKS_URL: url },
        jwt,
        "GET",
        "/v1/transitions",
      )
      expect([url, r.status, r.json.error?.code]).toEqual([url, 503, "misconfigured"])
      expect(r.json.error?.message).toContain("LEDGER_JWKS_URL must be the absolute http(s) URL")
      expect(r.json.error?.message).not.toContain("not a url")
    }
  })
})
