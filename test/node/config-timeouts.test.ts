// mycelium.yaml's storage `timeout`: a networked store that stops answering is an outage, and an outage fails
// closed with a typed error instead of holding the agent's call forever. Each store is built by loadConfig from disk
// and pointed at a real server that stalls: one that accepts connections and never answers, or a proxy in front of
// the real Postgres that stops passing the server's bytes once the connection is up.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { neonConfig } from "@neondatabase/serverless"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { ConfigError, loadConfigFromString } from "../../src/core/config/index.ts"
import { storageTimeout } from "../../src/core/config/normalize.ts"
import { LedgerStorageUnavailableError } from "../../src/core/ledger/index.ts"
import { loadConfig } from "../../src/node/config.ts"
import { DATABASE_URL, dropLedgerTable, NEON_WS_PROXY, runTag } from "../adapters/servers/env.ts"
import { silentHttp, silentTcp, stallingProxy } from "../adapters/servers/stall.ts"
import "../adapters/servers/neon.ts"
import { chargeYaml } from "./charge-yaml.ts"

const dir = mkdtempSync(join(tmpdir(), "mycelium-timeouts-"))
const tag = runTag("cfgto").replaceAll("-", "_")
const closers: (() => Promise<unknown> | unknown)[] = []
// The servers that stall go first: once the test is over nothing needs them, and a config then closes at once.
const servers: typeof closers = []
afterAll(async () => {
  for (const close of [...servers, ...closers.reverse()]) await close()
  rmSync(dir, { recursive: true, force: true })
})

const yaml = chargeYaml

/** One charge through the config-built ledger: how it ended, how long it took, and how often the body ran. */
async function chargeOnce(storage: string, env: Record<string, string> = {}) {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.yaml`)
  writeFileSync(path, yaml(storage))
  const config = await loadConfig(path, { env, onWarning: () => {} })
  closers.push(() => config.close())
  let runs = 0
  const charge = config.apply("charge", async (args: { amount: number }) => {
    runs++
    return { charged: args.amount }
  })
  const started = Date.now()
  const outcome = await charge({ amount: 7 }, { toolCallId: `call-${tag}` }).then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  )
  return { outcome, ms: Date.now() - started, runs: () => runs, config }
}

function expectOutage(r: Awaited<ReturnType<typeof chargeOnce>>, budgetMs = 5000): void {
  expect("error" in r.outcome ? r.outcome.error : r.outcome).toBeInstanceOf(LedgerStorageUnavailableError)
  expect(r.ms).toBeGreaterThanOrEqual(400)
  expect(r.ms).toBeLessThan(budgetMs)
  expect(r.runs()).toBe(0)
}

describe("storage timeout resolves per kind", () => {
  const resolve = (storage: string, env: Record<string, string> = {}) =>
    loadConfigFromString(yaml(storage), {
      env,
      onWarning: () => {},
      storageFactory: async () => {
        throw new Error("not built")
      },
    })
  const storageOf = async (storage: string) =>
    (await resolve(storage)).resolved.tools.get("charge")?.ledger?.storage

  it("defaults: 30 s for upstash, postgres and neon, the adapter's 5 s for redis, none for the embedded stores", async () => {
    expect((await storageOf("  storage: upstash\n  url: http://x\n  token: t"))?.timeout).toBe(30)
    expect((await storageOf("  storage: postgres\n  dsn: postgres://x"))?.timeout).toBe(30)
    expect((await storageOf("  storage: neon\n  dsn: postgres://x"))?.timeout).toBe(30)
    expect((await storageOf("  storage: redis\n  url: redis://x"))?.timeout).toBe(5)
    expect((await storageOf("  storage: memory"))?.timeout).toBeUndefined()
    expect((await storageOf("  storage: file\n  path: ./x.json"))?.timeout).toBeUndefined()
  })

  it("a choice built by hand (the command line's --postgres-dsn, --redis-url) gets its kind's default", () => {
    expect(storageTimeout({ kind: "postgres", dsn: "postgres://x" })).toBe(30)
    expect(storageTimeout({ kind: "neon", dsn: "postgres://x" })).toBe(30)
    expect(storageTimeout({ kind: "upstash", url: "http://x", token: "t" })).toBe(30)
    expect(storageTimeout({ kind: "redis", url: "redis://x" })).toBe(5)
    expect(storageTimeout({ kind: "postgres", dsn: "postgres://x", timeout: null })).toBeNull()
    expect(storageTimeout({ kind: "file", path: "x.json" })).toBeUndefined()
  })

  it("takes seconds up to a day, and null for no limit where the client allows it", async () => {
    expect(
      (await storageOf("  storage: upstash\n  url: http://x\n  token: t\n  timeout: 2.5"))?.timeout,
    ).toBe(2.5)
    expect((await storageOf("  storage: neon\n  dsn: postgres://x\n  timeout: 86400"))?.timeout).toBe(86400)
    expect((await storageOf("  storage: postgres\n  dsn: postgres://x\n  timeout: null"))?.timeout).toBeNull()
  })

  it.each([
    ["0", "  storage: upstash\n  url: http://x\n  token: t\n  timeout: 0"],
    ["negative", "  storage: neon\n  dsn: postgres://x\n  timeout: -1"],
    ["past a day (a timer's range)", "  storage: postgres\n  dsn: postgres://x\n  timeout: 86401"],
    ["a string", "  storage: redis\n  url: redis://x\n  timeout: '5'"],
    ["null for redis", "  storage: redis\n  url: redis://x\n  timeout: null"],
    ["on a memory store", "  storage: memory\n  timeout: 5"],
    ["on a file store", "  storage: file\n  path: ./x.json\n  timeout: 5"],
  ])("refuses %s, naming the key, line and column", async (_, storage) => {
    const error = await Promise.resolve()
      .then(() => resolve(storage))
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigError)
    const line =
      yaml(storage)
        .split("\n")
        .findIndex((l) => l.includes("timeout")) + 1
    expect((error as Error).message).toMatch(
      new RegExp(`^mycelium\\.yaml:${line}:\\d+ at 'action_ledger\\.timeout'`),
    )
  })
})

describe("a store that stops answering fails the call closed within its timeout", () => {
  it("upstash: a REST server that never answers", async () => {
    const server = await silentHttp(servers)
    const r = await chargeOnce(
      `  storage: upstash\n  url: http://127.0.0.1:${server.port}\n  token: t\n  timeout: 0.5`,
    )
    expectOutage(r)
    // One command, one request: the limit covers the client's own retries instead of restarting with each.
    expect(server.requests()).toBe(1)
  })

  it("redis: a TCP server that accepts and never replies", async () => {
    const port = await silentTcp(servers)
    expectOutage(await chargeOnce(`  storage: redis\n  url: redis://127.0.0.1:${port}\n  timeout: 0.5`))
  })

  // AUTH and SELECT go first on a new connection, before any command's own reply timer starts.
  it.each([
    ["a password (AUTH)", "redis://:secret@127.0.0.1"],
    ["a database (SELECT)", "redis://127.0.0.1"],
  ])("redis with %s: a server that accepts and never answers the connection's set-up", async (_, base) => {
    const port = await silentTcp(servers)
    const url = base.includes("secret") ? `${base}:${port}` : `${base}:${port}/2`
    expectOutage(await chargeOnce(`  storage: redis\n  url: ${url}\n  timeout: 0.5`))
  })

  it("postgres: a server that never finishes the connection's start-up", async () => {
    const port = await silentTcp(servers)
    expectOutage(
      await chargeOnce(
        `  storage: postgres\n  dsn: postgres://app:app@127.0.0.1:${port}/app\n  timeout: 0.5`,
      ),
    )
  })

  type Proxy = Awaited<ReturnType<typeof stallingProxy>>
  type Stall = { kind: "postgres" | "neon"; dsn: string; table: string; proxy: Proxy }

  /** Runs `test` with a proxy in front of the real Postgres (postgres) or the WebSocket proxy (neon). */
  async function throughProxy(kind: Stall["kind"], test: (s: Stall) => Promise<void>) {
    if (kind === "postgres") {
      const url = new URL(DATABASE_URL)
      const proxy = await stallingProxy(servers, { host: url.hostname, port: Number(url.port) })
      url.port = String(proxy.port)
      return test({ kind, dsn: String(url), table: `cfgto_pg_${tag}`, proxy })
    }
    const [host, port] = NEON_WS_PROXY.split(":")
    const proxy = await stallingProxy(servers, { host: host as string, port: Number(port) })
    const before = neonConfig.wsProxy
    neonConfig.wsProxy = (h, p) => `127.0.0.1:${proxy.port}/v1?address=${h}:${p}`
    try {
      await test({ kind, dsn: DATABASE_URL, table: `cfgto_neon_${tag}`, proxy })
    } finally {
      neonConfig.wsProxy = before
    }
  }

  /**
   * A first call completes through the proxy, then the server goes quiet: the second call fails closed, its body
   * unrun, and `close()` drops the connection within 5 s, though the server never answers its goodbye: closed
   * right `after` the refused call, a second `later`, or `during` the call (the store's 30 s timeout still running),
   * which it then ends too.
   */
  async function stallAfterFirstCall({ kind, dsn, table, proxy }: Stall, when: "after" | "later" | "during") {
    const direct = new pg.Pool({ connectionString: DATABASE_URL })
    closers.push(async () => {
      await dropLedgerTable(direct, table)
      await direct.end()
    })
    await new NeonLedgerStorage({ pool: direct, table }).migrate()
    const path = join(dir, `${kind}-stall-${when}.yaml`)
    // Room for a loaded machine: the first call (the pool's connect included) must answer in time.
    const timeout = when === "during" ? 30 : 2
    writeFileSync(path, yaml(`  storage: ${kind}\n  dsn: ${dsn}\n  table: ${table}\n  timeout: ${timeout}`))
    const config = await loadConfig(path, { onWarning: () => {} })
    closers.push(() => config.close())
    let runs = 0
    const charge = config.apply("charge", async () => ++runs)
    expect(await charge({ amount: 1 }, { toolCallId: `first-${when}-${tag}` })).toBe(1)
    expect(proxy.open()).toBeGreaterThan(0)
    proxy.stall()
    const started = Date.now()
    const second = charge({ amount: 2 }, { toolCallId: `second-${when}-${tag}` }).catch((e: unknown) => e)
    // A Neon client's WebSocket waited 30 s for a close frame the stalled proxy never passed, holding close() and a
    // process (the CLI) that had nothing left to do.
    const close = async () => {
      const closing = Date.now()
      await config.close()
      expect(Date.now() - closing).toBeLessThan(5000)
    }
    if (when === "during") await sleep(300).then(close)
    expect(await second).toBeInstanceOf(LedgerStorageUnavailableError)
    expect(Date.now() - started).toBeLessThan(8000)
    expect(runs).toBe(1)
    // `later`: the driver's own query_timeout has ended the client by then, so end() has nothing left to wait for,
    // while the client's WebSocket still waits on its close frame.
    if (when === "later") await sleep(1000)
    if (when !== "during") await close()
    for (const until = Date.now() + 1000; proxy.open() > 0 && Date.now() < until; ) await sleep(10)
    expect(proxy.open(), "connections left open after close()").toBe(0)
  }

  it("postgres: the real server stalls after the connection is up", () =>
    throughProxy("postgres", (s) => stallAfterFirstCall(s, "after")))

  it("neon: the WebSocket proxy stalls after the connection is up", () =>
    throughProxy("neon", (s) => stallAfterFirstCall(s, "after")))

  it.each(["postgres", "neon"] as const)(
    "%s: close() a second after the refused call, the driver done with it, still closes its connection",
    (kind) => throughProxy(kind, (s) => stallAfterFirstCall(s, "later")),
  )

  it.each(["postgres", "neon"] as const)(
    "%s: close() while a call waits on the stalled server ends the call closed, not after the 30 s timeout",
    (kind) => throughProxy(kind, (s) => stallAfterFirstCall(s, "during")),
  )

  it("neon: a WebSocket proxy that never completes the handshake", async () => {
    const port = await silentTcp(servers)
    const before = neonConfig.wsProxy
    neonConfig.wsProxy = (h, p) => `127.0.0.1:${port}/v1?address=${h}:${p}`
    try {
      expectOutage(await chargeOnce(`  storage: neon\n  dsn: ${DATABASE_URL}\n  timeout: 0.5`))
    } finally {
      neonConfig.wsProxy = before
    }
  })
})
