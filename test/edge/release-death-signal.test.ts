// Over HTTP, a not_executed release of a lapsed lease is refused (409 ledger_worker_alive) until the operator
// names an override or asserts the worker dead; a blank override is a 400, never a 5xx.
import { describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

describe("edge release of a lapsed lease", () => {
  it("409 ledger_worker_alive, then 200 with override_death_signal", async () => {
    const storage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage: () => storage })
    const now = Date.now() / 1000
    // Lapsed a second ago, heartbeat 11 s ago: far inside the default presumedDeadAfter (2 x leaseTtl).
    await storage.set(
      newEntry(
        {
          requestId: "pay:1",
          tool: "pay",
          owner: "w1",
          fence: 1,
          leaseUntil: now - 1,
          lastHeartbeatAt: now - 11,
        },
        now - 11,
      ),
    )
    const post = (body: unknown) =>
      app.request("/v1/transitions/pay%3A1/release", {
        method: "POST",
        // The API takes JSON bodies only (a text/plain POST is what a cross-site form can send): 415 otherwise.
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      })
    const base = { verified: "not_executed", reason: "no charge at the provider", by: "ops" }
    const refused = await post(base)
    expect(refused.status).toBe(409)
    const err = ((await refused.json()) as { error: { code: string; message: string } }).error
    expect(err.code).toBe("ledger_worker_alive")
    // In this surface's spelling: the in-process names (markWorkerDeadFor, overrideDeathSignal) mean nothing here.
    expect(err.message).toContain("/v1/transitions/pay:1/mark-worker-dead, or send override_death_signal")
    expect((await post({ ...base, override_death_signal: "" })).status).toBe(400)
    const ok = await post({ ...base, override_death_signal: "node w1 was drained and deleted" })
    expect(ok.status).toBe(200)
    expect(((await ok.json()) as { transition: Record<string, unknown> }).transition).toMatchObject({
      terminal_outcome: "BLOCKED",
      operator_resolution: "not_executed",
      released_from_outcome: "EXPIRED",
    })
  })

  it("expected_fence: 409 once another attempt holds the row, 400 when not a whole number, 200 when it matches", async () => {
    const storage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage: () => storage })
    const now = Date.now() / 1000
    await storage.set(
      newEntry({ requestId: "pay:2", tool: "pay", owner: "w2", fence: 2, leaseUntil: now - 1 }, now - 5),
    )
    const post = (path: string, body: unknown) =>
      app.request(`/v1/transitions/pay%3A2/${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      })
    const dead = { reason: "node drained", by: "ops", override_heartbeat: true }
    const stale = await post("mark-worker-dead", { ...dead, expected_fence: 1 })
    expect(stale.status).toBe(409)
    expect(((await stale.json()) as { error: { code: string } }).error.code).toBe("ledger_release_refused")
    expect((await post("mark-worker-dead", { ...dead, expected_fence: -1 })).status).toBe(400)
    expect((await post("mark-worker-dead", { ...dead, expected_fence: "2" })).status).toBe(400)
    expect((await post("mark-worker-dead", { ...dead, expected_fence: 2 })).status).toBe(200)
    const verdict = { verified: "not_executed", reason: "no charge", by: "ops" }
    expect((await post("release", { ...verdict, expected_fence: 1 })).status).toBe(409)
    const ok = await post("release", { ...verdict, expected_fence: 2 })
    expect(ok.status).toBe(200)
    expect(((await ok.json()) as { transition: Record<string, unknown> }).transition).toMatchObject({
      operator_resolution: "not_executed",
      fence: 3,
    })
  })
})
