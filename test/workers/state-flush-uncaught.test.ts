// StateFlush in workerd, which reports a promise that is already rejected when it is handed back from a then()
// callback as uncaught (an `unhandledrejection`, logged as an error), handled or not. Node, Deno and Bun do not.
// The store's refusal of an oversize snapshot was awaited for it; a run body that throws before its first await
// (or a store whose save throws before returning a promise) was still handed back so: one report per failed run.
import { env } from "cloudflare:workers"
import { describe, expect, it } from "vitest"
import {
  DurableObjectStateFlushStore,
  type GuardObjectNamespace,
} from "../../src/adapters/durable-object-guards.ts"
import {
  MemoryStateFlushStore,
  StateFlush,
  type StateFlushStore,
  StateSnapshotTooLargeError,
  StateSnapshotUnstoredError,
} from "../../src/state.ts"
import { uncaught } from "./uncaught.ts"

const LEDGER = (env as unknown as { LEDGER: GuardObjectNamespace }).LEDGER
const run = `u${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`

describe("StateFlush rejections in workerd are handled, never reported uncaught", () => {
  it("a body that throws before its first await, or throws without being async", async () => {
    const flush = new StateFlush()
    const bodies = {
      async: async () => {
        throw new RangeError("page 4 missing")
      },
      sync: () => {
        throw new RangeError("page 4 missing")
      },
    }
    for (const [kind, body] of Object.entries(bodies)) {
      const seen = await uncaught(async () => {
        await expect(flush.run(`throws-${kind}-${run}`, body)).rejects.toThrow("page 4 missing")
      })
      expect(seen).toEqual([])
      expect(await flush.load(`throws-${kind}-${run}`)).toMatchObject({
        status: "error",
        error: "RangeError: page 4 missing",
      })
    }
  })

  it("a store whose save throws before it returns a promise", async () => {
    const inner = new MemoryStateFlushStore()
    const store: StateFlushStore = {
      load: (runId) => inner.load(runId),
      save: (s) => {
        if (s.status === "completed") throw new Error("refused at once")
        return inner.save(s)
      },
    }
    const flush = new StateFlush({ storage: store })
    const seen = await uncaught(async () => {
      const err = await flush
        .run(`sync-store-${run}`, async (r) => {
          r.record({ page: 1 })
          await r.checkpoint()
          return "done"
        })
        .catch((e: unknown) => e)
      expect(err).toBeInstanceOf(StateSnapshotUnstoredError)
      expect(err).toMatchObject({ result: "done", cause: new Error("refused at once") })
    })
    expect(seen).toEqual([])
    expect(await flush.load(`sync-store-${run}`)).toMatchObject({ status: "in-progress", state: { page: 1 } })
  })

  it("an oversize snapshot the Durable Object store refuses before any I/O", async () => {
    const flush = new StateFlush({
      storage: new DurableObjectStateFlushStore(LEDGER, { name: `uncaught-${run}` }),
    })
    const seen = await uncaught(async () => {
      const err = await flush
        .run(`big-${run}`, (r) => {
          r.record({ csv: "x".repeat(2_000_000) })
          return "exported"
        })
        .catch((e: unknown) => e)
      expect(err).toBeInstanceOf(StateSnapshotUnstoredError)
      expect((err as Error).cause).toBeInstanceOf(StateSnapshotTooLargeError)
    })
    expect(seen).toEqual([])
  })
})
