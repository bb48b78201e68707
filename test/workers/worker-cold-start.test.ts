// The worker entry's first requests, in workerd. The app (and its tenant cache) is built on the first request; the
// requests that arrived while that build ran each built their own (3 concurrent cold requests, 3 builds), so one
// tenant had several ledgers in one isolate at once, each with its own queues and leases. A failed build must not
// stay: the next request builds again.
import { env } from "cloudflare:workers"
import { exportJWK, generateKeyPair } from "jose"
import { describe, expect, it, vi } from "vitest"
import { callWorker, signToken } from "./worker-fetch.ts"

const SECRET = "workerd-cold-start-secret-workerd-cold-start"
const run = `w${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
const binding = { agent_id: "pay", policy_version: "1", side_effect_class: "keyed_mutate" }

/**
 * Bindings that count what reads them: a build reads LEDGER_SHARDS once, and LEDGER once to check it (twice with a
 * receipt key); every tenant ledger a build's cache makes reads LEDGER once more.
 */
function countedBindings(vars: Record<string, unknown>, shards: () => string | undefined = () => undefined) {
  const reads = { builds: 0, ledger: 0 }
  const bindings = { ...(env as object), LEDGER_JWT_SECRET: SECRET, ...vars }
  Object.defineProperties(bindings, {
    LEDGER_SHARDS: {
      get: () => {
        reads.builds++
        return shards()
      },
    },
    LEDGER: {
      get: () => {
        reads.ledger++
        return (env as { LEDGER: unknown }).LEDGER
      },
    },
  })
  return { bindings, reads }
}

const begin = (id: string) => ({ tool: "pay", args: { id }, binding, meta: { request_id: id } })

describe("worker cold start", () => {
  it("concurrent first requests share one build, and one ledger of their tenant", async () => {
    const { bindings, reads } = countedBindings({})
    const jwt = await signToken(SECRET, { tenant: `cold-${run}`, scope: "ledger:agent" })
    const first = await Promise.all(
      [1, 2, 3].map((i) => callWorker(bindings, jwt, "POST", "/v1/calls", begin(`pay-${run}-${i}`))),
    )
    expect(first.map((r) => [r.status, r.json.status])).toEqual([
      [200, "run"],
      [200, "run"],
      [200, "run"],
    ])
    // Before: { builds: 3, ledger: 6 }, three apps each with a ledger of this tenant.
    expect(reads).toEqual({ builds: 1, ledger: 2 })
    const again = await callWorker(bindings, jwt, "POST", "/v1/calls", begin(`pay-${run}-1`))
    expect(again.json.status).toBe("poll")
    expect(reads).toEqual({ builds: 1, ledger: 2 })
  })

  it("with a receipt key (a build that awaits its key's check) too", async () => {
    const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true })
    const jwk = JSON.stringify({ ...(await exportJWK(privateKey)), kid: `k-${run}` })
    const { bindings, reads } = countedBindings({ LEDGER_RECEIPT_JWK: jwk })
    const jwt = await signToken(SECRET, { tenant: `cold-rk-${run}`, scope: "ledger:agent" })
    const first = await Promise.all(
      [1, 2, 3, 4].map((i) => callWorker(bindings, jwt, "POST", "/v1/calls", begin(`rk-${run}-${i}`))),
    )
    expect(first.map((r) => r.json.status)).toEqual(["run", "run", "run", "run"])
    // One build (its check and its receipt store read LEDGER) and one ledger of the tenant.
    expect(reads).toEqual({ builds: 1, ledger: 3 })
  })

  it("a failed build answers every waiting request the same stable code, no stack, and is not kept", async () => {
    let fail = true
    // A build that throws what no option check threw (a bug, or a platform fault): its text may hold anything.
    const { bindings, reads } = countedBindings({}, () => {
      if (fail) throw new Error("secret-ish detail at host 10.0.0.7")
      return undefined
    })
    const jwt = await signToken(SECRET, { tenant: `cold-fail-${run}`, scope: "ledger:agent" })
    const logged = vi.spyOn(console, "error").mockImplementation(() => {})
    const failed = await Promise.all(
      [1, 2, 3].map((i) => callWorker(bindings, jwt, "POST", "/v1/calls", begin(`f-${run}-${i}`))),
    )
    for (const r of failed) {
      expect([r.status, r.json.error]).toEqual([500, { code: "internal_error", message: "internal error" }])
      expect(JSON.stringify(r.json)).not.toMatch(/10\.0\.0\.7|at .*\.ts/)
    }
    expect(reads.builds).toBe(1)
    // Logged once for the build, with its text: the operator's copy, not the caller's.
    expect(logged.mock.calls.map((c) => String(c[1]))).toEqual(["Error: secret-ish detail at host 10.0.0.7"])
    logged.mockRestore()
    // The fault passed: the next request builds again and is served.
    fail = false
    const next = await callWorker(bindings, jwt, "POST", "/v1/calls", begin(`f-${run}-1`))
    expect([next.status, next.json.status]).toEqual([200, "run"])
    expect(reads.builds).toBe(2)
  })

  it("a misconfigured build is 503 misconfigured for every waiting request, and a fixed variable is read again", async () => {
    let shards = "four"
    const { bindings, reads } = countedBindings({}, () => shards)
    const jwt = await signToken(SECRET, { tenant: `cold-conf-${run}`, scope: "ledger:agent" })
    const failed = await Promise.all(
      [1, 2, 3].map((i) => callWorker(bindings, jwt, "POST", "/v1/calls", begin(`c-${run}-${i}`))),
    )
    expect(failed.map((r) => [r.status, r.json.error?.code])).toEqual([
      [503, "misconfigured"],
      [503, "misconfigured"],
      [503, "misconfigured"],
    ])
    expect(failed[0]?.json.error?.message).toContain("LEDGER_SHARDS")
    expect(reads.builds).toBe(1)
    shards = "1"
    const next = await callWorker(bindings, jwt, "POST", "/v1/calls", begin(`c-${run}-1`))
    expect([next.status, next.json.status]).toEqual([200, "run"])
    expect(reads.builds).toBe(2)
  })
})
