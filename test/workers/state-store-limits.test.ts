// StateFlush on the Durable Object store at SQLite's 2 MB value limit, in workerd. A snapshot over it was sent to the
// object and refused there as a bare error (SQLITE_TOOBIG), read as an outage: nothing said it was the snapshot's
// size, or what to do. It is StateSnapshotTooLargeError now, before the write; the run's ending keeps its result.
import { env } from "cloudflare:workers"
import { describe, expect, it } from "vitest"
import {
  DurableObjectStateFlushStore,
  type GuardObjectNamespace,
} from "../../src/adapters/durable-object-guards.ts"
import {
  StateFlush,
  StateFlushError,
  type StateSnapshot,
  StateSnapshotTooLargeError,
  StateSnapshotUnstoredError,
} from "../../src/state.ts"

const LEDGER = (env as unknown as { LEDGER: GuardObjectNamespace }).LEDGER
const run = `s${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`

interface StateStub {
  stateLoad(runId: string): Promise<StateSnapshot | null>
  stateSave(snapshot: StateSnapshot): Promise<void>
}

/** The object's store, counting the saves that reach the object (by status). */
function countedStore(name: string) {
  const sent: string[] = []
  const namespace: GuardObjectNamespace = {
    idFromName: (n) => LEDGER.idFromName(n),
    get: (id) => {
      const stub = LEDGER.get(id) as StateStub
      return {
        stateLoad: (runId: string) => stub.stateLoad(runId),
        stateSave: (s: StateSnapshot) => {
          sent.push(s.status)
          return stub.stateSave(s)
        },
      }
    },
  }
  return { store: new DurableObjectStateFlushStore(namespace, { name }), sent }
}

describe("Durable Object state store: a snapshot over SQLite's 2 MB value limit", () => {
  it("a run that returns with 2.5 MB of state: typed refusal before the write, its result kept", async () => {
    const { store, sent } = countedStore(`state-limits-${run}`)
    const flush = new StateFlush({ storage: store })
    await flush.run(`small-${run}`, (r) => r.record({ page: 1 }))
    const err = await flush
      .run(`big-${run}`, async (r) => {
        r.record({ page: 1 })
        await r.checkpoint()
        r.record({ csv: "x".repeat(2_500_000) })
        return "exported"
      })
      .then(
        () => null,
        (e: unknown) => e,
      )
    // As before: the ending's error keeps the result; its cause, the refusal, is typed now (a bare Error before).
    expect(err).toBeInstanceOf(StateSnapshotUnstoredError)
    expect(err).toMatchObject({ returned: true, result: "exported", status: "completed" })
    const cause = (err as Error).cause
    expect(cause).toBeInstanceOf(StateSnapshotTooLargeError)
    expect(cause).toBeInstanceOf(StateFlushError)
    expect(cause).toMatchObject({ code: "state_snapshot_too_large", runId: `big-${run}`, limit: 1_900_000 })
    expect((cause as StateSnapshotTooLargeError).bytes).toBeGreaterThan(2_500_000)
    expect((cause as Error).message).toMatch(/limit of 1900000 .*: record less state/)
    // The checkpoint reached the object; the oversize completion did not, and the checkpoint stands.
    expect(sent).toEqual(["completed", "in-progress"])
    expect(await flush.load(`big-${run}`)).toMatchObject({ status: "in-progress", state: { page: 1 } })
    expect(await flush.resume(`big-${run}`)).toEqual({ page: 1 })
  })

  it("a checkpoint over the limit rejects typed and writes nothing; one that fits is stored", async () => {
    const { store, sent } = countedStore(`state-limits-cp-${run}`)
    const flush = new StateFlush({ storage: store })
    // 1,200,000 UTF-16 units, but 2.4 MB of UTF-8 (what SQLite measures).
    const big = "é𝄞".repeat(400_000)
    await flush.run(`cp-${run}`, async (r) => {
      r.record({ notes: big })
      await expect(r.checkpoint()).rejects.toBeInstanceOf(StateSnapshotTooLargeError)
      expect(sent).toEqual([])
      r.record({ notes: "é".repeat(900_000) })
      await r.checkpoint()
    })
    expect(sent).toEqual(["in-progress", "completed"])
    expect((await flush.resume(`cp-${run}`)).notes).toHaveLength(900_000)
  })
})
