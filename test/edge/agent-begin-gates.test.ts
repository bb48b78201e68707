// What an agent's begin may not decide for itself: how long another worker's silence must last before it counts as
// death (the app's presumedDeadAfter, never 2 x the lease_ttl the agent sends), and whether its call can be
// deduplicated at all (a begin with no binding and no id is refused, not run under a random id every time).
import { describe, expect, it } from "vitest"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

type Answer = {
  status?: string
  fence?: number
  request_id?: string
  error?: { code: string; message: string }
}

const post = async (app: ReturnType<typeof createLedgerApp>, path: string, body: unknown) => {
  const r = await app.request(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  })
  return { status: r.status, json: (await r.json()) as Answer }
}

// An idempotent write: a lapsed lease is taken over once its worker counts as dead (a payment's only blocks).
const binding = { agent_id: "sync", policy_version: "1", side_effect_class: "idempotent_mutate" }

describe("POST /v1/calls: death by silence is the server's", () => {
  it("a redispatch sending lease_ttl 1 cannot presume a silent worker dead before presumedDeadAfter", async () => {
    let now = 1_800_000_000
    const app = createLedgerApp({
      storage: new MemoryLedgerStorage(),
      clock: { now: () => now },
      reclaimRequiresDeathSignal: true,
    })
    const begin = { tool: "sync", args: { doc: 5 }, binding, meta: { request_id: "p1" }, lease_ttl: 60 }
    expect((await post(app, "/v1/calls", begin)).json).toMatchObject({ status: "run", fence: 1 })
    now += 61 // the lease lapsed; the worker has been silent 61 s, far inside the default 7200 s
    for (const lease_ttl of [60, 1, 0.001]) {
      const again = await post(app, "/v1/calls", { ...begin, lease_ttl })
      expect(again.status).toBe(200)
      // Not "run" at fence 2: that took the call over from a worker that may still be writing.
      expect(again.json.status, `lease_ttl ${lease_ttl}`).toBe("poll")
    }
    now += 7200 // silence past the app's presumedDeadAfter: now the death signal holds
    const late = await post(app, "/v1/calls", { ...begin, lease_ttl: 1 })
    expect(late.json).toMatchObject({ status: "run", fence: 2 })
  })

  it("an app's own presumedDeadAfter decides, whatever lease the agent asks for", async () => {
    let now = 1_800_000_000
    const app = createLedgerApp({
      storage: new MemoryLedgerStorage(),
      clock: { now: () => now },
      reclaimRequiresDeathSignal: true,
      presumedDeadAfter: 300,
    })
    const begin = { tool: "sync", args: {}, binding, meta: { request_id: "p2" }, lease_ttl: 3600 }
    expect((await post(app, "/v1/calls", begin)).json.status).toBe("run")
    now += 3601
    expect((await post(app, "/v1/calls", begin)).json).toMatchObject({ status: "run", fence: 2 })
  })
})

describe("POST /v1/calls: a call the ledger could not deduplicate is refused", () => {
  it("no binding, no request_id, no tool_call_id: 400 missing_request_identity, nothing written", async () => {
    const storage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage })
    for (const body of [
      { tool: "t", args: {} },
      { tool: "t", args: {}, meta: { thread_id: "th" } },
    ]) {
      const r = await post(app, "/v1/calls", body)
      expect(r.status).toBe(400)
      expect(r.json.error?.code).toBe("missing_request_identity")
      expect(r.json.error?.message).toContain("meta.request_id or meta.tool_call_id")
    }
    expect(storage.size).toBe(0)
  })

  it("any one of them is enough, and a retry under it replays", async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    for (const body of [
      { tool: "t", args: {}, meta: { tool_call_id: "call_1" } },
      { tool: "t", args: {}, meta: { request_id: "r1" } },
      { tool: "t", args: {}, binding: { ...binding, side_effect_class: "read" } },
    ]) {
      const first = await post(app, "/v1/calls", body)
      expect(first.json.status).toBe("run")
      const again = await post(app, "/v1/calls", body)
      expect(again.json.status).not.toBe("run")
    }
  })
})
