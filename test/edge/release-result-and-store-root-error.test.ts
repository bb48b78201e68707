// Two edge API holes: an operator release's verified result (a provider's transaction id) was read as a JS number, so
// past 2^53 it was replayed and signed rounded while a completion kept its digits; and the bare LedgerError a store
// throws (FileLedgerStorage losing its lock mid-write) was a 409 conflict that quoted the lock path, not a 503 outage.
import { describe, expect, it } from "vitest"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { LedgerError } from "../../src/core/ledger/errors.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import { ManualClock } from "../../src/testing.ts"

const post = (app: ReturnType<typeof createLedgerApp>, path: string, body: string) =>
  app.request(path, { method: "POST", headers: { "content-type": "application/json" }, body })

describe("an operator release's result", () => {
  it("a release's verified result with an integer beyond 2^53 is replayed exactly, as a completion's is", async () => {
    const clock = new ManualClock(1000)
    const app = createLedgerApp({ storage: new MemoryLedgerStorage(), clock })
    const begin = '{"tool":"pay","args":{"amount":5},"meta":{"request_id":"pay-1"}}'
    expect((await post(app, "/v1/calls", begin)).status).toBe(200)
    clock.advance(120) // the lease lapsed; the operator checked the provider
    expect(
      (
        await post(
          app,
          "/v1/transitions/pay-1/mark-worker-dead",
          '{"reason":"host gone","override_heartbeat":true}',
        )
      ).status,
    ).toBe(200)
    const release = await post(
      app,
      "/v1/transitions/pay-1/release",
      '{"verified":"completed","reason":"provider shows it paid","result":{"provider_txn":123456789012345678901}}',
    )
    expect(release.status).toBe(200)
    const replay = (await (await post(app, "/v1/calls", begin)).json()) as { status: string; result: unknown }
    expect(replay.status).toBe("replay")
    // Sent 123456789012345678901; a completion would replay "123456789012345678901".
    expect(replay.result).toEqual({ provider_txn: "123456789012345678901" })
  })
})

describe("a store's bare LedgerError", () => {
  it("FileLedgerStorage's lost-lock LedgerError is an outage (503), its lock path not echoed", async () => {
    const storage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage })
    const r = await post(app, "/v1/calls", '{"tool":"t","args":{},"meta":{"request_id":"c"}}')
    const { fence, lease } = (await r.json()) as { fence: number; lease: string }
    // What src/adapters/file.ts #flush throws when its lock went stale mid-write (paused too long).
    const logged: unknown[] = []
    const quiet = console.error
    console.error = (...a: unknown[]) => logged.push(a)
    Object.assign(storage, {
      tryTransition: () =>
        Promise.reject(new LedgerError("lost /srv/secret/ledger.json.lock (paused too long): retry")),
    })
    const done = await post(app, "/v1/calls/c/complete", JSON.stringify({ fence, lease, result: 1 }))
    const text = await done.text()
    console.error = quiet
    expect({ status: done.status, leaks: text.includes("/srv/secret") }).toEqual({
      status: 503,
      leaks: false,
    })
    expect(JSON.parse(text).error.code).toBe("ledger_error")
    // The server's log keeps what the caller is not told.
    expect(String(logged)).toContain("/srv/secret")
  })
})
