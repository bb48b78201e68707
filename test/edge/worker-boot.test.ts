// The worker entry must start in a real workerd (Miniflare), bundled as `wrangler deploy` would bundle it. The
// vitest workers pool imports modules inside a handler, so it cannot see what workerd forbids at global scope
// (random values, timers, I/O while a module loads); this test can. It also drives the deployed shape end to end:
// HTTP → Hono → per-tenant Durable Objects.
import { fileURLToPath } from "node:url"
import { type BuildOptions, build } from "esbuild"
import { exportJWK, generateKeyPair, SignJWT } from "jose"
import { Miniflare } from "miniflare"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import { ActionLedger } from "../../src/core/index.ts"

/** Bundled as `wrangler deploy` bundles a worker. */
async function bundle(entry: Pick<BuildOptions, "entryPoints" | "stdin" | "external">): Promise<string> {
  const out = await build({
    ...entry,
    bundle: true,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    conditions: ["workerd", "worker", "browser"],
    write: false,
    logLevel: "silent",
  })
  return out.outputFiles[0]?.text ?? ""
}

let script = ""
beforeAll(async () => {
  script = await bundle({
    entryPoints: [fileURLToPath(new URL("../../src/edge/worker.ts", import.meta.url))],
    external: ["cloudflare:*"],
  })
}, 60_000)

function worker(bindings: Record<string, string>) {
  return new Miniflare({
    modules: true,
    script,
    compatibilityDate: "2025-09-01",
    bindings,
    durableObjects: { LEDGER: { className: "MyceliumLedgerObject", useSQLite: true } },
  })
}

describe("an app built at module scope, the usual Hono pattern", () => {
  it("starts in workerd: createLedgerApp draws no random value while the module loads", async () => {
    const script = await bundle({
      stdin: {
        contents: [
          'import { createLedgerApp } from "./src/edge/index.ts"',
          'import { MemoryLedgerStorage } from "./src/core/index.ts"',
          "const app = createLedgerApp({ storage: new MemoryLedgerStorage() })",
          "export default { fetch: (req) => app.fetch(req) }",
        ].join("\n"),
        resolveDir: fileURLToPath(new URL("../../", import.meta.url)),
        loader: "ts",
      },
    })
    const mf = new Miniflare({
      modules: true,
      script,
      compatibilityDate: "2025-09-01",
    })
    try {
      const r = await mf.dispatchFetch("http://edge.test/health")
      expect(r.status).toBe(200)
    } finally {
      await mf.dispose()
    }
  }, 60_000)
})

describe("the Cloudflare worker entry in workerd", () => {
  const mfs: Miniflare[] = []
  afterAll(async () => {
    for (const m of mfs) await m.dispose()
  })

  it("boots, serves JSON errors, and runs a ledgered tool once under 32 concurrent HTTP redispatches", async () => {
    const mf = worker({ MYCELIUM_ALLOW_UNAUTHENTICATED: "true" })
    mfs.push(mf)
    const nope = await mf.dispatchFetch("http://edge.test/nope")
    expect(nope.status).toBe(404)
    expect(((await nope.json()) as { error: { code: string } }).error.code).toBe("not_found")
    const bad = await mf.dispatchFetch("http://edge.test/v1/rows/x/claim", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{",
    })
    expect(bad.status).toBe(400)
    const plain = await mf.dispatchFetch("http://edge.test/v1/rows/x/claim", { method: "POST", body: "{}" })
    expect(plain.status).toBe(415)

    const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      mf.dispatchFetch(String(input), init as never)) as unknown as typeof globalThis.fetch
    const ledger = new ActionLedger({
      storage: new HttpLedgerStorage({ url: "http://edge.test", fetch }),
      pollInterval: 0.01,
      onWarning: () => {},
    })
    let runs = 0
    const pay = ledger.tool(
      { name: "pay", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
      async (_a, tx) =>
        tx.sideEffect(async () => {
          runs++
          await new Promise((r) => setTimeout(r, 50))
          return { id: "pi_1" }
        }),
    )
    const results = await Promise.all(
      Array.from({ length: 32 }, () => pay({ amount: 1 }, { toolCallId: "c-32" })),
    )
    expect(runs).toBe(1)
    expect(new Set(results.map((r) => r.id))).toEqual(new Set(["pi_1"]))
    const listed = (await (await mf.dispatchFetch("http://edge.test/v1/transitions")).json()) as {
      transitions: Array<{ terminal_outcome: string }>
    }
    expect(listed.transitions.map((t) => t.terminal_outcome)).toEqual(["COMPLETED"])
  }, 60_000)

  // The app is built once and shared by the requests that arrive while it builds (test/workers/worker-cold-start.test.ts
  // counts the builds). Here each request has its own context, as in production: a build awaited across requests
  // (the receipt key's check awaits Web Crypto) must answer all of them, never hang one.
  it("concurrent first requests, each its own request, share the build that awaits the receipt key", async () => {
    const secret = "worker-secret-worker-secret-worker-secret"
    const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true })
    const jwk = JSON.stringify({ ...(await exportJWK(privateKey)), kid: "boot-1" })
    const mf = worker({ LEDGER_JWT_SECRET: secret, LEDGER_RECEIPT_JWK: jwk })
    mfs.push(mf)
    const token = await new SignJWT({ tenant: "cold", scope: "ledger:agent" })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(secret))
    const binding = { agent_id: "a", policy_version: "1", side_effect_class: "keyed_mutate" }
    const answers = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const r = await mf.dispatchFetch("http://edge.test/v1/calls", {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ tool: "pay", args: { i }, binding, meta: { request_id: `cold-${i}` } }),
        })
        return [r.status, ((await r.json()) as { status?: string }).status]
      }),
    )
    expect(answers).toEqual(Array.from({ length: 8 }, () => [200, "run"]))
  }, 60_000)

  it("with a JWT secret: no token → 401, tenants isolated", async () => {
    const secret = "worker-secret-worker-secret-worker-secret"
    const mf = worker({ LEDGER_JWT_SECRET: secret })
    mfs.push(mf)
    expect((await mf.dispatchFetch("http://edge.test/v1/transitions")).status).toBe(401)
    const token = (tenant: string) =>
      new SignJWT({ tenant, scope: "ledger:store ledger:reader" })
        .setProtectedHeader({ alg: "HS256" })
        .setExpirationTime("5m")
        .sign(new TextEncoder().encode(secret))
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      mf.dispatchFetch(String(input), init as never)) as unknown as typeof globalThis.fetch
    const a = new ActionLedger({
      storage: new HttpLedgerStorage({ url: "http://edge.test", fetch, token: await token("acme") }),
      onWarning: () => {},
    })
    await a.tool(
      { name: "t", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "read" } },
      async () => 1,
    )({}, { requestId: "same" })
    const b = new HttpLedgerStorage({ url: "http://edge.test", fetch, token: await token("globex") })
    expect(await b.get("same")).toBeNull()
    expect(
      await new HttpLedgerStorage({ url: "http://edge.test", fetch, token: await token("acme") }).get("same"),
    ).not.toBeNull()
  }, 60_000)
})
