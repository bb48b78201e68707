// A key set server that answers but not with a key set (a 503 page, an HTML error page) is the key source's fault,
// not the token's: the agent should retry (503 auth_unavailable), not drop a valid token (401).
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { exportJWK, generateKeyPair, SignJWT } from "jose"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp, jwtAuth } from "../../src/edge/index.ts"

let answer: { status: number; type: string; body: string } = { status: 503, type: "text/plain", body: "" }
const server = createServer((_req, res) => {
  res.writeHead(answer.status, { "content-type": answer.type })
  res.end(answer.body)
})

beforeAll(() => new Promise<void>((r) => server.listen(0, "127.0.0.1", r)))
afterAll(() => new Promise<void>((r) => server.close(() => r())))

describe("jwtAuth with a key set server that answers badly", () => {
  it("is 503 auth_unavailable for a 503 or an HTML page, and 200 once the key set is back", async () => {
    const { privateKey, publicKey } = await generateKeyPair("ES256")
    const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" }
    const { port } = server.address() as AddressInfo
    // One app per answer: the key set is cached once fetched.
    const app = () =>
      createLedgerApp({
        storage: new MemoryLedgerStorage(),
        authenticate: jwtAuth({ jwksUrl: `http://127.0.0.1:${port}/jwks.json` }),
      })
    const token = await new SignJWT({ tenant: "t", scope: "ledger:reader" })
      .setProtectedHeader({ alg: "ES256", kid: "k1" })
      .setExpirationTime("5m")
      .sign(privateKey)
    const ask = async () => {
      const r = await app().request("/v1/transitions", { headers: { authorization: `Bearer ${token}` } })
      return [
        r.status,
        r.status === 200 ? "ok" : ((await r.json()) as { error: { code: string } }).error.code,
      ]
    }
    answer = { status: 503, type: "text/plain", body: "down for maintenance" }
    expect(await ask()).toEqual([503, "auth_unavailable"])
    answer = { status: 200, type: "text/html", body: "<html>gateway error</html>" }
    expect(await ask()).toEqual([503, "auth_unavailable"])
    answer = { status: 200, type: "application/json", body: JSON.stringify({ keys: [jwk] }) }
    expect(await ask()).toEqual([200, "ok"])
    // A token the key set does not vouch for is still the token's fault.
    const other = await generateKeyPair("ES256")
    const forged = await new SignJWT({ tenant: "t", scope: "ledger:reader" })
      .setProtectedHeader({ alg: "ES256", kid: "k1" })
      .setExpirationTime("5m")
      .sign(other.privateKey)
    const r = await app().request("/v1/transitions", { headers: { authorization: `Bearer ${forged}` } })
    expect(r.status).toBe(401)
  })
})
