// examples/cloudflare-worker.ts as deployed: bundled by esbuild and served by workerd (Miniflare) with its Durable
// Object, charging through a real HTTP payment service on loopback that counts the charges it receives.
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { build } from "esbuild"
import { Miniflare } from "miniflare"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

let charges = 0
const payments = createServer((req, res) => {
  charges++
  req.resume()
  // Slow enough that redispatches arrive while the first charge is in flight.
  setTimeout(() => res.end(JSON.stringify({ id: `pi_${charges}` })), 50)
})
let mf: Miniflare

beforeAll(async () => {
  await new Promise<void>((r) => payments.listen(0, "127.0.0.1", r))
  const bundle = await build({
    entryPoints: ["examples/cloudflare-worker.ts"],
    bundle: true,
    format: "esm",
    platform: "neutral",
    write: false,
    external: ["cloudflare:workers"],
    logLevel: "silent",
  })
  mf = new Miniflare({
    modules: true,
    script: bundle.outputFiles[0]?.text ?? "",
    compatibilityDate: "2025-09-01",
    durableObjects: { LEDGER: { className: "MyceliumLedgerObject", useSQLite: true } },
    bindings: { PAYMENTS_URL: `http://127.0.0.1:${(payments.address() as AddressInfo).port}/charge` },
  })
  await mf.ready
}, 60_000)
afterAll(async () => {
  await mf?.dispose()
  payments.close()
})

const pay = (body: unknown) =>
  mf.dispatchFetch("http://worker/pay", { method: "POST", body: JSON.stringify(body) })

describe("Cloudflare worker example", () => {
  it("charges once for a tool call redispatched eight times at once, and again for a new call", async () => {
    const call = { amount: 5, recipient: "acct_1", toolCallId: `cf-${Date.now()}` }
    const res = await Promise.all(Array.from({ length: 8 }, () => pay(call)))
    expect(res.map((r) => r.status)).toEqual(Array(8).fill(200))
    expect(new Set(await Promise.all(res.map(async (r) => ((await r.json()) as { id: string }).id)))).toEqual(
      new Set(["pi_1"]),
    )
    expect(charges).toBe(1)
    const other = await pay({ ...call, toolCallId: `${call.toolCallId}-2` })
    expect(await other.json()).toEqual({ id: "pi_2" })
    expect(charges).toBe(2)
  })

  it("answers a hostile body with a 400 JSON error and charges nothing", async () => {
    const before = charges
    for (const body of ["nope", { amount: "5" }, [], null]) {
      const r = await mf.dispatchFetch("http://worker/pay", {
        method: "POST",
        body: typeof body === "string" ? body : JSON.stringify(body),
      })
      expect(r.status).toBe(400)
      expect(await r.json()).toMatchObject({ error: { code: "invalid_body" } })
    }
    expect(charges).toBe(before)
  })
})
