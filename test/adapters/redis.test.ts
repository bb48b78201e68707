// The ledger on plain Redis over TCP: the same conformance suite, a Python-layout interop check with the Upstash
// adapter on the same server, a race across connections, and fail-closed behaviour when the server is unreachable.
import net from "node:net"
import { describe, expect, it } from "vitest"
import { RedisConnectionError, RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import { ActionLedger, LedgerStorageUnavailableError } from "../../src/core/index.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const prefix = `mycelium-test:${runTag("redis")}:action:`

testLedgerStorage("redis (TCP, real redis-server)", () => {
  const storage = new RedisLedgerStorage({ url: REDIS_URL, prefix })
  const peer = new RedisLedgerStorage({ url: REDIS_URL, prefix })
  return {
    storage,
    peer,
    cleanup: () => {
      storage.close()
      peer.close()
    },
  }
})

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const

describe("redis over TCP", () => {
  it("shares one ledger with the Upstash adapter (same keys and scripts)", async () => {
    await requireUpstash()
    const tcp = new RedisLedgerStorage({ url: REDIS_URL, prefix })
    const rest = new UpstashLedgerStorage({ redis: upstashClient(), prefix })
    let runs = 0
    const body = async () => ++runs
    const viaTcp = new ActionLedger({ storage: tcp }).tool({ name: "pay", binding }, body)
    const viaRest = new ActionLedger({ storage: rest }).tool({ name: "pay", binding }, body)
    const id = runTag("interop")
    expect(await viaTcp({ n: 1 }, { toolCallId: id })).toBe(1)
    expect(await viaRest({ n: 1 }, { toolCallId: id })).toBe(1)
    expect(runs).toBe(1)
    tcp.close()
  })

  it("50 concurrent redispatches over 5 connections run the body once", async () => {
    const stores = Array.from({ length: 5 }, () => new RedisLedgerStorage({ url: REDIS_URL, prefix }))
    let runs = 0
    const tools = stores.map((storage) =>
      new ActionLedger({ storage, pollInterval: 0.01 }).tool({ name: "race", binding }, async () => {
        runs++
        await new Promise((r) => setTimeout(r, 30))
        return "done"
      }),
    )
    const id = runTag("race")
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => tools[i % 5]?.({}, { toolCallId: id })),
    )
    expect(results.every((r) => r === "done")).toBe(true)
    expect(runs).toBe(1)
    for (const s of stores) s.close()
  })

  it("an unreachable server fails closed: the body never runs", async () => {
    const storage = new RedisLedgerStorage({ url: "redis://127.0.0.1:1", prefix, timeoutMs: 500 })
    let runs = 0
    const tool = new ActionLedger({ storage }).tool({ name: "down", binding }, async () => ++runs)
    await expect(tool({}, { toolCallId: runTag("down") })).rejects.toBeInstanceOf(
      LedgerStorageUnavailableError,
    )
    expect(runs).toBe(0)
  })

  it("AUTH and SELECT from the URL reach the server (a wrong password is refused, not ignored)", async () => {
    const storage = new RedisLedgerStorage({
      url: "redis://:wrong@127.0.0.1:6379/2",
      prefix,
      timeoutMs: 1000,
    })
    await expect(storage.get("x")).rejects.toThrow(/AUTH|password/i)
    storage.close()
  })

  // A socket that never became the connection (AUTH failed, or close() came first) is ended all the same: left
  // open, it kept the process alive and every later call failed on it without reconnecting.
  async function authServer(answer: "never" | "refuse") {
    let open = 0
    let accepted = 0
    const server = net.createServer((s) => {
      open++
      accepted++
      s.on("close", () => open--)
      s.on("error", () => {})
      // Read (and drop) what arrives, so the client's end of the socket is seen.
      s.on("data", () => {
        if (answer === "refuse") s.write("-WRONGPASS invalid username-password pair\r\n")
      })
    })
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    const port = (server.address() as net.AddressInfo).port
    const until = async (what: () => boolean) => {
      for (let i = 0; i < 100 && !what(); i++) await new Promise((r) => setTimeout(r, 20))
      return what()
    }
    return { port, open: () => open, accepted: () => accepted, until, close: () => server.close() }
  }

  /** A store that sends AUTH on connect, with a reply timer long enough that only the server's answer matters. */
  const storageWithPassword = (port: number) =>
    new RedisLedgerStorage({ url: `redis://:pw@127.0.0.1:${port}`, prefix, timeoutMs: 60_000 })

  it("close() while AUTH is unanswered ends the socket", async () => {
    const srv = await authServer("never")
    const storage = storageWithPassword(srv.port)
    const read = storage.get("x").catch((e: unknown) => e)
    expect(await srv.until(() => srv.open() === 1)).toBe(true)
    await storage.close()
    expect(await read).toBeInstanceOf(RedisConnectionError)
    expect(await srv.until(() => srv.open() === 0)).toBe(true)
    srv.close()
  })

  it("a refused AUTH ends its socket, and the next call connects again", async () => {
    const srv = await authServer("refuse")
    const storage = storageWithPassword(srv.port)
    await expect(storage.get("x")).rejects.toThrow(/WRONGPASS/)
    expect(await srv.until(() => srv.open() === 0)).toBe(true)
    await expect(storage.get("x")).rejects.toThrow(/WRONGPASS/)
    expect(srv.accepted()).toBe(2)
    await storage.close()
    srv.close()
  })
})
