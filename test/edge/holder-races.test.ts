// An agent that renews its lease from a timer while it reports crossing the boundary (any HTTP client can; a
// RemoteLedger request that timed out leaves one running on the server): the renewal, read before the boundary moved
// and written after, used to put the boundary back. The failure then read as before the effect and the next begin
// answered `run`: the payment ran twice.
import { describe, expect, it } from "vitest"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import { gatedStore, nextRead } from "../core/ledger/gated-store.ts"

const begin = {
  tool: "pay",
  args: { amount: 1 },
  binding: {
    agent_id: "a",
    policy_version: "1",
    side_effect_class: "non_idempotent_mutate",
    retry_permission: "safe_retry",
  },
  meta: { tool_call_id: "call_1" },
}

describe("edge: a renewal racing the boundary report", () => {
  it("keeps the boundary crossed, answers both, and the redispatch is blocked, not run", async () => {
    const rows = new MemoryLedgerStorage()
    const read = nextRead()
    const { store: storage, arrived, open } = gatedStore(rows, read.gated)
    const app = createLedgerApp({ storage })
    const post = async (path: string, body: unknown) => {
      const res = await app.request(path, {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json" },
      })
      return { status: res.status, body: (await res.json()) as Record<string, unknown> }
    }
    const run = await post("/v1/calls", begin)
    expect(run.body.status).toBe("run")
    const id = run.body.request_id as string
    const holder = { fence: run.body.fence, lease: run.body.lease }

    read.arm()
    const renewal = post(`/v1/calls/${id}/renew`, holder)
    await arrived
    const crossed = await post(`/v1/calls/${id}/boundary`, { ...holder, boundary: "crossed" })
    open()
    const renewed = await renewal
    expect([crossed.status, renewed.status]).toEqual([200, 200])
    expect(renewed.body.side_effect_boundary).toBe("crossed")
    expect((await rows.get(id))?.sideEffectBoundary).toBe("crossed")

    const failed = await post(`/v1/calls/${id}/fail`, { ...holder, error: "gateway timeout" })
    expect(failed.body.terminal_outcome).toBe("FAILED_AFTER_EFFECT")
    const again = await post("/v1/calls", begin)
    expect(again.body.status).toBe("blocked")
  })
})
