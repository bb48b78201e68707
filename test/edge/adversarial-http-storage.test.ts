// HttpLedgerStorage when the server in front of it is broken or hostile: the real app behind a layer that swaps
// rows, invents claim outcomes or never advances a cursor. A row of another call must never become this call's
// replay, and a list must end.
import { describe, expect, it } from "vitest"
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { LedgerStorageUnavailableError } from "../../src/core/ledger/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

const pay = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
type Body = Record<string, unknown>
type Tamper = (path: string, real: Body) => unknown

/** The real app (every scope, no auth) behind a layer that may rewrite any JSON answer. */
function behind() {
  const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
  const server = { tamper: ((_p, real) => real) as Tamper, requests: 0 }
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    server.requests++
    const res = await app.fetch(new Request(input, init))
    if (res.status !== 200) return res
    return Response.json(server.tamper(new URL(String(input)).pathname, (await res.json()) as Body))
  }) as typeof globalThis.fetch
  const storage = new HttpLedgerStorage({ url: "http://x", fetch })
  const ledger = new ActionLedger({ storage, onWarning: () => {}, pollTimeout: 1 })
  let runs = 0
  const payTool = ledger.tool({ name: "pay", binding: pay }, async () => {
    runs++
    return `receipt ${runs}`
  })
  /** The stored row of `id` as the real app answers it. */
  const rowOf = async (id: string) =>
    ((await (await app.request(`/v1/rows/${id}`)).json()) as { row: Body }).row
  return { server, storage, payTool, rowOf, runs: () => runs }
}

describe("HttpLedgerStorage against a broken or hostile server", () => {
  it("a claim or get answered with another call's finished row is refused, never replayed", async () => {
    const s = behind()
    expect(await s.payTool({ amount: 1 }, { requestId: "theirs" })).toBe("receipt 1")
    const theirs = await s.rowOf("theirs")
    s.server.tamper = (path, real) =>
      path === "/v1/rows/mine/claim"
        ? { outcome: "completed", entry: theirs }
        : path === "/v1/rows/mine"
          ? { row: theirs }
          : real
    await expect(s.payTool({ amount: 1 }, { requestId: "mine" })).rejects.toBeInstanceOf(
      LedgerStorageUnavailableError,
    )
    await expect(s.storage.get("mine")).rejects.toMatchObject({ code: "invalid_response" })
    expect(s.runs()).toBe(1)
  })

  it("an invented claim outcome is refused, not read as 'someone else holds it'", async () => {
    const s = behind()
    await s.payTool({ amount: 1 }, { requestId: "done" })
    const done = await s.rowOf("done")
    s.server.tamper = (path, real) =>
      path === "/v1/rows/next/claim" ? { outcome: "bogus", entry: { ...done, request_id: "next" } } : real
    await expect(s.payTool({ amount: 1 }, { requestId: "next" })).rejects.toBeInstanceOf(
      LedgerStorageUnavailableError,
    )
    expect(s.runs()).toBe(1)
  })

  it("a list whose cursor never advances ends with an error instead of asking forever", async () => {
    const s = behind()
    await s.payTool({ amount: 1 }, { requestId: "a" })
    s.server.tamper = (path, real) => (path === "/v1/rows" ? { rows: [], cursor: "a" } : real)
    const before = s.server.requests
    const walk = async () => {
      for await (const _ of s.storage.list()) {
        // nothing: the answer has no rows
      }
    }
    await expect(walk()).rejects.toMatchObject({ code: "invalid_response" })
    expect(s.server.requests - before).toBeLessThanOrEqual(2)
    // A cursor that cycles (a, b, a, ...) with rows on every page.
    const row = await s.rowOf("a")
    let page = 0
    s.server.tamper = (path, real) =>
      path === "/v1/rows" ? { rows: [row], cursor: page++ % 2 === 0 ? "a" : "b" } : real
    const cycling = s.server.requests
    await expect(walk()).rejects.toMatchObject({ code: "invalid_response" })
    expect(s.server.requests - cycling).toBe(3)
    s.server.tamper = (path, real) => (path === "/v1/rows" ? { rows: "x", cursor: null } : real)
    await expect(walk()).rejects.toMatchObject({ code: "invalid_response" })
    s.server.tamper = (path, real) => (path === "/v1/dispatch/d" ? { rows: null } : real)
    await expect(s.storage.findByDispatchId("d")).rejects.toMatchObject({ code: "invalid_response" })
  })

  it("the untampered server: one run, then the replay, and lists end", async () => {
    const s = behind()
    expect(await s.payTool({ amount: 1 }, { requestId: "x" })).toBe("receipt 1")
    expect(await s.payTool({ amount: 1 }, { requestId: "x" })).toBe("receipt 1")
    const ids: string[] = []
    for await (const e of s.storage.list({ limit: 10 })) ids.push(e.requestId)
    expect([ids, s.runs()]).toEqual([["x"], 1])
  })

  it("a transition answered 200 with another shape fails closed, not 'lost the race' (which dropped the result)", async () => {
    const s = behind()
    s.server.tamper = (path, real) => (path.endsWith("/transition") ? { status: "ok" } : real)
    await expect(s.payTool({ amount: 1 }, { requestId: "t1" })).rejects.toBeInstanceOf(
      LedgerStorageUnavailableError,
    )
    expect(s.runs()).toBe(1)
    s.server.tamper = (_path, real) => real
    // The write reached the server (only its answer was replaced): a redispatch replays it, never runs it again.
    expect(await s.payTool({ amount: 1 }, { requestId: "t1" })).toBe("receipt 1")
    expect(s.runs()).toBe(1)
  })
})
