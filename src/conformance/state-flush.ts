// The suite every StateFlushStore must pass, driven through StateFlush (`mycelium-runtime/conformance`,
// docs/adapter-kit.md). Runs in Node, workerd and Chromium: vitest APIs only.
import { describe, expect, it } from "vitest"
import { StateFlush, StateFlushError } from "../state.ts"
import type { StateFlushStoreFixtureFactory } from "./factory.ts"

let seq = 0
const uid = (label: string) => `run-${Date.now().toString(36)}-${++seq}-${label}`
const never = () => new Promise<never>(() => {})

export function testStateFlush(name: string, factory: StateFlushStoreFixtureFactory) {
  describe(`StateFlush on ${name}`, () => {
    it("cancel: the AbortSignal flushes aborted/cancel at once, even if the body never settles", async () => {
      const { storage, peer } = await factory()
      const flush = new StateFlush({ storage })
      const runId = uid("cancel")
      const ctl = new AbortController()
      const p = flush.run(
        runId,
        async (run) => {
          run.record({ step: 1, messages: ["hi"] })
          run.record({ step: 2 })
          setTimeout(() => ctl.abort(new Error("user pressed stop")), 5)
          return await never()
        },
        { signal: ctl.signal },
      )
      await expect(p).rejects.toThrow("user pressed stop")
      const snap = await new StateFlush({ storage: peer ?? storage }).load(runId)
      expect(snap).toMatchObject({
        run_id: runId,
        status: "aborted",
        reason: "cancel",
        error: "Error: user pressed stop",
        state: { step: 2, messages: ["hi"] },
      })
      expect(await new StateFlush({ storage: peer ?? storage }).resume(runId)).toEqual({
        step: 2,
        messages: ["hi"],
      })
    })

    it("error: flushed as error with 'Type: message', and the error is rethrown", async () => {
      const { storage } = await factory()
      const flush = new StateFlush({ storage })
      const runId = uid("error")
      await expect(
        flush.run(runId, (run) => {
          run.record({ fetched: 3 })
          throw new RangeError("page 4 missing")
        }),
      ).rejects.toThrow("page 4 missing")
      expect(await flush.load(runId)).toMatchObject({
        status: "error",
        reason: "error",
        error: "RangeError: page 4 missing",
        state: { fetched: 3 },
      })
    })

    it("completion: flushed as completed unless turned off; resume resumes from it", async () => {
      const { storage } = await factory()
      const runId = uid("done")
      const flush = new StateFlush({ storage })
      const done = await flush.run(runId, (run) => {
        run.record({ total: 9 })
        return "ok"
      })
      expect(done).toBe("ok")
      expect(await flush.load(runId)).toMatchObject({
        status: "completed",
        reason: null,
        error: null,
        state: { total: 9 },
      })
      const resumed = await flush.run(uid("next"), (run) => run.state, { initial: await flush.resume(runId) })
      expect(resumed).toEqual({ total: 9 })

      const off = new StateFlush({ storage, flushOnComplete: false })
      const quiet = uid("quiet")
      await off.run(quiet, (run) => run.record({ x: 1 }))
      expect(await off.load(quiet)).toBeNull()
      await expect(off.resume(quiet)).rejects.toBeInstanceOf(StateFlushError)
    })

    it("disconnect: its signal flushes aborted/disconnect; an explicit flush inside is final", async () => {
      const { storage } = await factory()
      const flush = new StateFlush({ storage })
      const client = new AbortController()
      const runId = uid("disc")
      const p = flush.run(
        runId,
        async (run) => {
          run.record({ streamed: 120 })
          client.abort(new Error("socket closed"))
          return await never()
        },
        { disconnectSignal: client.signal },
      )
      await expect(p).rejects.toThrow("socket closed")
      expect(await flush.load(runId)).toMatchObject({
        status: "aborted",
        reason: "disconnect",
        state: { streamed: 120 },
      })

      const explicit = uid("explicit")
      await expect(
        flush.run(explicit, async (run) => {
          run.record({ a: 1 })
          await run.flush("in-progress", { reason: "handoff" })
          throw new Error("later failure")
        }),
      ).rejects.toThrow("later failure")
      expect(await flush.load(explicit)).toMatchObject({
        status: "in-progress",
        reason: "handoff",
        state: { a: 1 },
      })
    })

    it("flushOn limits which endings write; a checkpoint survives a run that never ends", async () => {
      const { storage } = await factory()
      const onlyErrors = new StateFlush({ storage, flushOn: ["error"], flushOnComplete: false })
      const ctl = new AbortController()
      const runId = uid("limited")
      const p = onlyErrors.run(runId, () => never(), { signal: ctl.signal })
      ctl.abort(new Error("stop"))
      await expect(p).rejects.toThrow("stop")
      expect(await onlyErrors.load(runId)).toBeNull()

      const cp = uid("checkpoint")
      const flush = new StateFlush({ storage })
      let saved!: () => void
      const savedP = new Promise<void>((r) => {
        saved = r
      })
      void flush.run(cp, async (run) => {
        run.record({ page: 7 })
        await run.checkpoint()
        saved()
        return await never()
      })
      await savedP
      expect(await flush.load(cp)).toMatchObject({ status: "in-progress", state: { page: 7 } })
    })
  })
}
