// Crash and restart: a worker process is SIGKILLed while it holds a claim, before or inside its side effect; a
// restarted worker then redispatches the same call on the same durable store. Effects are counted in a file
// outside the ledger, so the count cannot be produced by the code under test.
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { ActionLedger, LedgerHardBlockError, type SideEffectClass } from "../../src/core/index.ts"
import { killWhenReady } from "./crash/kill-when-ready.ts"
import { type Backend, openStorage } from "./crash/storage.ts"
import { dropLedgerTable, requireUpstash, runTag } from "./servers/env.ts"
import { neonPool } from "./servers/neon.ts"

const effectsIn = (file: string) =>
  existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).length : 0

async function crashChild(
  backend: Backend,
  where: string,
  cls: SideEffectClass,
  phase: string,
  effects: string,
) {
  await killWhenReady("test/adapters/crash/child.ts", [backend, where, cls, phase, effects])
}

for (const backend of ["file", "upstash", "neon"] as const) {
  describe(`crash and restart on ${backend}`, () => {
    const tables: string[] = []
    const dirs: string[] = []
    afterAll(async () => {
      for (const d of dirs) rmSync(d, { recursive: true, force: true })
      if (!tables.length) return
      const pool = neonPool(undefined, 1)
      for (const t of tables) await dropLedgerTable(pool, t)
      await pool.end()
    })
    const setup = async (label: string) => {
      if (backend === "upstash") await requireUpstash()
      const dir = mkdtempSync(join(tmpdir(), "mycelium-crash-"))
      dirs.push(dir)
      const tag = runTag(`crash-${label}`)
      const where =
        backend === "file"
          ? join(dir, "ledger.json")
          : backend === "neon"
            ? tag.replace(/[^a-z0-9]/g, "_")
            : tag
      if (backend === "neon") tables.push(where)
      return { where, effects: join(dir, "effects.log") }
    }

    const restarted = async (where: string, effects: string, cls: SideEffectClass) => {
      const opened = await openStorage(backend, where)
      const ledger = new ActionLedger({
        storage: opened.storage,
        leaseTtl: 1,
        pollInterval: 0.05,
        owner: "restarted",
        onWarning: () => {},
      })
      const binding = { agentId: "crash", policyVersion: "1", sideEffectClass: cls }
      const tool = ledger.tool({ name: "transfer", binding }, async (_a, tx) =>
        tx.sideEffect(async () => {
          appendFileSync(effects, "restarted\n")
          return { transferred: 5 }
        }),
      )
      return { ledger, call: () => tool({ amount: 5 }, { requestId: "transfer:1" }), close: opened.close }
    }

    it("killed inside sideEffect(): the redispatch hard-blocks and never pays again; an operator settles it", async () => {
      const { where, effects } = await setup("inside")
      await crashChild(backend, where, "keyed_mutate", "inside", effects)
      expect(effectsIn(effects)).toBe(1)
      const w = await restarted(where, effects, "keyed_mutate")
      try {
        // The dead worker's 1 s lease runs out while we wait; then the ambiguous row refuses to run again.
        await expect(w.call()).rejects.toBeInstanceOf(LedgerHardBlockError)
        await expect(w.call()).rejects.toBeInstanceOf(LedgerHardBlockError)
        expect(effectsIn(effects)).toBe(1)
        expect(await w.ledger.get("transfer:1")).toMatchObject({
          terminalOutcome: "BLOCKED",
          sideEffectBoundary: "maybe_crossed",
        })
        const verdict = {
          verified: "completed",
          result: { transferred: 5 },
          by: "ops",
          reason: "seen at the bank",
        } as const
        await w.ledger.release("transfer:1", verdict)
        expect(await w.call()).toEqual({ transferred: 5 })
        expect(effectsIn(effects)).toBe(1)
      } finally {
        await w.close()
      }
    }, 60_000)

    it("killed before its side effect: an idempotent_mutate runs exactly once after the lease lapses", async () => {
      const { where, effects } = await setup("before")
      await crashChild(backend, where, "idempotent_mutate", "before", effects)
      expect(effectsIn(effects)).toBe(0)
      const w = await restarted(where, effects, "idempotent_mutate")
      try {
        const results = await Promise.all([w.call(), w.call(), w.call()])
        expect(results).toEqual([{ transferred: 5 }, { transferred: 5 }, { transferred: 5 }])
        expect(effectsIn(effects)).toBe(1)
        expect(await w.ledger.get("transfer:1")).toMatchObject({
          terminalOutcome: "COMPLETED",
          fence: 2,
          owner: "restarted",
        })
      } finally {
        await w.close()
      }
    }, 60_000)

    it("killed before its side effect: a keyed_mutate waits for a verdict, then runs exactly once", async () => {
      const { where, effects } = await setup("keyed")
      await crashChild(backend, where, "keyed_mutate", "before", effects)
      const w = await restarted(where, effects, "keyed_mutate")
      try {
        await expect(w.call()).rejects.toBeInstanceOf(LedgerHardBlockError)
        expect(effectsIn(effects)).toBe(0)
        // A lapsed lease needs its owner's death signal before a not_executed verdict; the test killed it.
        await w.ledger.markWorkerDeadFor("transfer:1", {
          by: "ops",
          reason: "worker process SIGKILLed",
          overrideHeartbeat: true,
        })
        await w.ledger.release("transfer:1", {
          verified: "not_executed",
          by: "ops",
          reason: "no transfer at the bank",
        })
        const results = await Promise.all([w.call(), w.call()])
        expect(results).toEqual([{ transferred: 5 }, { transferred: 5 }])
        expect(effectsIn(effects)).toBe(1)
      } finally {
        await w.close()
      }
    }, 60_000)
  })
}
