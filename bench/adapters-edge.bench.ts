// Per-call cost of a ledgered tool (claim + sideEffect boundary + completion, plus the drift lookup) on the edge
// and browser stores: file (Node), IndexedDB (fake-indexeddb in Node, and real IndexedDB in headless Chromium),
// and the Durable Object (workerd via Miniflare). The memory store, measured in the same run, is the ratio base.
import "fake-indexeddb/auto"
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { build } from "esbuild"
import { Miniflare } from "miniflare"
import { chromium } from "playwright"
import { FileLedgerStorage } from "../src/adapters/file.ts"
import { IndexedDbLedgerStorage } from "../src/adapters/indexeddb.ts"
import { ActionLedger, type LedgerStorage, MemoryLedgerStorage } from "../src/core/index.ts"
import { seededFile } from "./fixtures.ts"

const binding = { agentId: "bench", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const

async function perCall(storage: LedgerStorage, n: number, label: string): Promise<number> {
  const ledger = new ActionLedger({ storage, leaseTtl: 60, onWarning: () => {} })
  const pay = ledger.tool({ name: "send_payment", binding }, async (a: { amount: number }, tx) =>
    tx.sideEffect(async () => ({ ok: true, amount: a.amount })),
  )
  for (let i = 0; i < 20; i++) await pay({ amount: i }, { toolCallId: `${label}-warm-${i}` })
  const t0 = performance.now()
  for (let i = 0; i < n; i++) await pay({ amount: i }, { toolCallId: `${label}-${i}` })
  return (performance.now() - t0) / n
}

const rowsOut: Array<[string, number]> = []
const report = (label: string, ms: number) => {
  rowsOut.push([label, ms])
  console.log(`${label.padEnd(60)} ${ms.toFixed(3).padStart(8)} ms`)
}

const memory = await perCall(new MemoryLedgerStorage(), 2000, "mem")
report("memory (base)", memory)

// The disk (tmpdir) and, where present, tmpfs (/dev/shm): on ext4 every rename-over also flushes the new
// file's data, so the disk rows measure the device; the tmpfs rows measure the adapter.
for (const [where, base] of [
  ["disk", tmpdir()],
  ["tmpfs", "/dev/shm"],
] as const) {
  if (!existsSync(base)) continue
  const dir = mkdtempSync(join(base, "mycelium-bench-"))
  try {
    for (const rows of [0, 300, 1000]) {
      for (const fsync of [true, false]) {
        const s = new FileLedgerStorage(seededFile(dir, rows, `${fsync}`), { fsync })
        const ms = await perCall(s, 200, `file-${rows}-${fsync}`)
        await s.close()
        report(`file (${where}), ${rows} rows stored, fsync ${fsync ? "on" : "off"}`, ms)
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

{
  const s = new IndexedDbLedgerStorage({ dbName: "bench" })
  report("indexeddb (fake-indexeddb, Node)", await perCall(s, 500, "idb"))
  await s.close()
}

// ---- Durable Object inside workerd (Miniflare): one request runs the calls, timed from Node ---------------
{
  const entry = join(mkdtempSync(join(tmpdir(), "mycelium-bench-do-")), "worker.ts")
  const root = new URL("..", import.meta.url).pathname
  writeFileSync(
    entry,
    `import { DurableObjectLedgerStorage } from "${root}src/adapters/durable-object.ts"
export { MyceliumLedgerObject } from "${root}src/adapters/durable-object.ts"
export default {
  async fetch(req, env) {
    // Imported lazily: the core draws a random process owner id at module load, which workerd forbids at global scope.
    const { ActionLedger } = await import("${root}src/core/index.ts")
    const u = new URL(req.url)
    const n = Number(u.searchParams.get("n")), shards = Number(u.searchParams.get("shards")), tag = u.searchParams.get("tag")
    const storage = new DurableObjectLedgerStorage(env.LEDGER, { name: tag, shards })
    const ledger = new ActionLedger({ storage, leaseTtl: 60, onWarning: () => {} })
    const pay = ledger.tool({ name: "send_payment", binding: ${JSON.stringify(binding)} },
      async (a, tx) => tx.sideEffect(async () => ({ ok: true, amount: a.amount })))
    for (let i = 0; i < n; i++) await pay({ amount: i }, { toolCallId: tag + "-" + i })
    return new Response("ok")
  },
}
`,
  )
  const bundle = await build({
    entryPoints: [entry],
    bundle: true,
    format: "esm",
    platform: "neutral",
    write: false,
    external: ["cloudflare:workers"],
  })
  const mf = new Miniflare({
    modules: true,
    script: bundle.outputFiles[0]?.text ?? "",
    compatibilityDate: "2025-09-01",
    durableObjects: { LEDGER: { className: "MyceliumLedgerObject", useSQLite: true } },
  })
  try {
    for (const shards of [1, 4]) {
      const warm = await mf.dispatchFetch(`http://do.bench/?n=20&shards=${shards}&tag=warm${shards}`)
      if (!warm.ok) throw new Error(`bench worker failed: ${warm.status} ${await warm.text()}`)
      const n = 300
      const t0 = performance.now()
      const res = await mf.dispatchFetch(`http://do.bench/?n=${n}&shards=${shards}&tag=run${shards}`)
      if ((await res.text()) !== "ok") throw new Error("bench worker failed")
      report(
        `durable object (workerd/Miniflare, ${shards} shard${shards > 1 ? "s" : ""})`,
        (performance.now() - t0) / n,
      )
    }
  } finally {
    await mf.dispose()
  }
}

// ---- real IndexedDB in headless Chromium --------------------------------------------------------------------
if (existsSync("/usr/bin/chromium")) {
  const entry = join(mkdtempSync(join(tmpdir(), "mycelium-bench-idb-")), "page.ts")
  const root = new URL("..", import.meta.url).pathname
  writeFileSync(
    entry,
    `import { IndexedDbLedgerStorage } from "${root}src/adapters/indexeddb.ts"
import { ActionLedger } from "${root}src/core/index.ts"
;(globalThis as any).bench = async (n: number, durability: "strict" | "relaxed") => {
  const storage = new IndexedDbLedgerStorage({ dbName: "bench-" + Date.now(), durability })
  const ledger = new ActionLedger({ storage, leaseTtl: 60, onWarning: () => {} })
  const pay = ledger.tool({ name: "send_payment", binding: ${JSON.stringify(binding)} },
    async (a: { amount: number }, tx) => tx.sideEffect(async () => ({ ok: true, amount: a.amount })))
  for (let i = 0; i < 20; i++) await pay({ amount: i }, { toolCallId: "warm-" + i })
  const t0 = performance.now()
  for (let i = 0; i < n; i++) await pay({ amount: i }, { toolCallId: "c-" + i })
  return (performance.now() - t0) / n
}
`,
  )
  const js = (await build({ entryPoints: [entry], bundle: true, format: "iife", write: false }))
    .outputFiles[0]?.text
  const server = createServer((req, res) => {
    res.setHeader("content-type", req.url === "/b.js" ? "text/javascript" : "text/html")
    res.end(req.url === "/b.js" ? js : '<script src="/b.js"></script>')
  }).listen(0, "127.0.0.1")
  await new Promise((r) => server.once("listening", r))
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
  })
  try {
    const page = await browser.newPage()
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
    for (const durability of ["strict", "relaxed"] as const) {
      const ms = await page.evaluate(
        ([n, d]) =>
          (globalThis as unknown as { bench(n: number, d: string): Promise<number> }).bench(
            n as number,
            d as string,
          ),
        [300, durability] as const,
      )
      report(`indexeddb (real, headless Chromium, durability ${durability})`, ms)
    }
  } finally {
    await browser.close()
    server.close()
  }
}

console.log("\nratio to memory:")
for (const [label, ms] of rowsOut) console.log(`${label.padEnd(60)} ${(ms / memory).toFixed(0).padStart(8)}x`)
