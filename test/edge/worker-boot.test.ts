// The worker entry must start in a real workerd (Miniflare), bundled as `wrangler deploy` would bundle it. The
// vitest workers pool imports modules inside a handler, so it cannot see what workerd forbids at global scope
// (random values, timers, I/O while a module loads); this test can.
import { fileURLToPath } from "node:url"
import { build } from "esbuild"
import { Miniflare } from "miniflare"
import { expect, it } from "vitest"

it("src/edge/worker.ts boots in workerd and serves JSON 404s; the Durable Object answers RPC", async () => {
  const bundle = await build({
    entryPoints: [fileURLToPath(new URL("../../src/edge/worker.ts", import.meta.url))],
    bundle: true,
    format: "esm",
    platform: "neutral",
    write: false,
    external: ["cloudflare:*", "node:*"],
    logLevel: "silent",
  })
  const mf = new Miniflare({
    modules: true,
    script: bundle.outputFiles[0]?.text ?? "",
    compatibilityDate: "2025-09-01",
    compatibilityFlags: ["nodejs_compat"],
    durableObjects: { LEDGER: { className: "MyceliumLedgerObject", useSQLite: true } },
  })
  try {
    const res = await mf.dispatchFetch("http://edge.test/nope")
    expect(res.status).toBe(404)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("not_found")
    // Miniflare types the namespace with its own workers-types flavour; only idFromName/get are used.
    const ns = (await mf.getDurableObjectNamespace("LEDGER")) as unknown as {
      idFromName(name: string): unknown
      get(id: unknown): { ledgerGet(id: string): Promise<unknown> }
    }
    const stub = ns.get(ns.idFromName("boot"))
    expect(await stub.ledgerGet("missing")).toBeNull()
  } finally {
    await mf.dispose()
  }
}, 60_000)
