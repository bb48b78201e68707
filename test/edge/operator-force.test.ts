// Over HTTP, an IN_FLIGHT row on an unbounded lease (a killed worker's) is released with `force` once its worker is
// marked dead, and refusals about a live worker name this API's route and body fields.
import { describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import { ManualClock } from "../../src/testing.ts"

const T0 = 1_767_225_600

function setup() {
  const storage = new MemoryLedgerStorage()
  const clock = new ManualClock(T0)
  const app = createLedgerApp({ storage: () => storage, clock })
  const post = async (path: string, body: unknown) => {
    const r = await app.request(`/v1/transitions/pay%3A1/${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    })
    const json = (await r.json()) as {
      error?: { code: string; message: string }
      transition?: Record<string, unknown>
    }
    return { status: r.status, ...json }
  }
  return { storage, clock, post }
}

const release = { verified: "not_executed", reason: "no charge at the provider", by: "ops" }

describe("POST /v1/transitions/:id/release with force", () => {
  it("409 without force or without mark-worker-dead, 200 with both; 400 for a non-boolean force", async () => {
    const { storage, post } = setup()
    await storage.set({
      ...newEntry({ requestId: "pay:1", tool: "pay", owner: "w1", fence: 1, leaseUntil: null }, T0 - 5),
      sideEffectBoundary: "maybe_crossed",
    })
    expect((await post("release", { ...release, force: "yes" })).status).toBe(400)
    const refused = await post("release", release)
    expect([refused.status, refused.error?.code]).toEqual([409, "ledger_release_refused"])
    expect(refused.error?.message).toContain("release with force")
    expect((await post("release", { ...release, force: true })).status).toBe(409)

    const alive = await post("mark-worker-dead", { reason: "pod deleted" })
    expect([alive.status, alive.error?.code]).toEqual([409, "ledger_worker_alive"])
    expect(alive.error?.message).toMatch(/^Cannot mark worker dead for request 'pay:1'/)
    expect(alive.error?.message).toContain("(over HTTP: send override_heartbeat: true)")
    expect(alive.error?.message).not.toContain("overrideHeartbeat")
    expect((await post("mark-worker-dead", { reason: "pod deleted", override_heartbeat: true })).status).toBe(
      200,
    )

    expect((await post("release", release)).status).toBe(409)
    const ok = await post("release", { ...release, force: true })
    expect(ok.status).toBe(200)
    expect(ok.transition).toMatchObject({
      operator_resolution: "not_executed",
      released_from_outcome: "IN_FLIGHT",
      terminal_outcome: "BLOCKED",
    })
  })

  it("a bounded live lease stays 409, force or not", async () => {
    const { storage, post } = setup()
    await storage.set(
      newEntry({ requestId: "pay:1", tool: "pay", owner: "w1", fence: 1, leaseUntil: T0 + 600 }, T0 - 5),
    )
    expect((await post("mark-worker-dead", { reason: "gone", override_heartbeat: true })).status).toBe(200)
    const r = await post("release", { ...release, force: true })
    expect([r.status, r.error?.code]).toEqual([409, "ledger_release_refused"])
    expect(r.error?.message).toContain("release it once EXPIRED")
  })
})
