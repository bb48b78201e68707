// The ledger and the guard stores in one database on Chromium's real IndexedDB: whichever opens it second adds its
// object stores with a version bump, and both keep working (they used to fail with VersionError or NotFoundError).
import { describe, expect, it } from "vitest"
import { IndexedDbLedgerStorage } from "../../src/adapters/indexeddb.ts"
import {
  IndexedDbReceiptStore,
  IndexedDbStateFlushStore,
  IndexedDbTaskStore,
} from "../../src/adapters/indexeddb-guards.ts"
import { ActionLedger } from "../../src/core/index.ts"
import { hmacReceiptSigner, ReceiptEmitter } from "../../src/receipts.ts"
import { StateFlush } from "../../src/state.ts"
import { TaskLedger } from "../../src/tasks.ts"

let n = 0
const fresh = () => `mycelium-shared-browser-${Date.now()}-${n++}`

interface Guard {
  readonly use: (i: number) => Promise<void>
  readonly close: () => Promise<void>
}

const guards: Record<string, (dbName: string) => Guard> = {
  tasks: (dbName) => {
    const storage = new IndexedDbTaskStore({ dbName, blockedTimeout: 2 })
    const run = new TaskLedger({ storage, leaseRenewInterval: 0, onWarning: () => {} }).task(
      { name: "report" },
      async (args: { i: number }) => `report ${args.i}`,
    )
    return {
      use: async (i) => expect(await run({ i }, { taskId: `task-${i}` })).toBe(`report ${i}`),
      close: () => storage.close(),
    }
  },
  state: (dbName) => {
    const storage = new IndexedDbStateFlushStore({ dbName, blockedTimeout: 2 })
    const flush = new StateFlush({ storage })
    return {
      use: async (i) => {
        await flush.run(`run-${i}`, (run) => run.record({ i }))
        expect(await flush.resume(`run-${i}`)).toEqual({ i })
      },
      close: () => storage.close(),
    }
  },
  receipts: (dbName) => {
    const storage = new IndexedDbReceiptStore({ dbName, blockedTimeout: 2 })
    const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store: storage, agentId: "a" })
    return {
      use: async (i) => {
        await emitter.emit({
          action: "t",
          actionKind: "tool",
          requestId: `r${i}`,
          kwargs: { i },
          status: "completed",
        })
        expect((await storage.list()).map((r) => r.request_id)).toContain(`r${i}`)
      },
      close: () => storage.close(),
    }
  },
}

function ledgerOn(dbName: string) {
  const storage = new IndexedDbLedgerStorage({ dbName, blockedTimeout: 2 })
  const send = new ActionLedger({ storage, leaseTtl: 60, onWarning: () => {} }).tool(
    { name: "send", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
    async (args: { i: number }, tx) => tx.sideEffect(async () => ({ sent: args.i })),
  )
  return {
    use: async (i: number) => expect(await send({ i }, { toolCallId: `call-${i}` })).toEqual({ sent: i }),
    close: () => storage.close(),
  }
}

describe("the ledger and the guard stores share one IndexedDB database (Chromium)", () => {
  for (const [kind, make] of Object.entries(guards)) {
    for (const guardsFirst of [true, false]) {
      it(`${kind} and the ledger, ${guardsFirst ? `${kind}` : "the ledger"} first: both keep working`, async () => {
        const dbName = fresh()
        const ledger = ledgerOn(dbName)
        const guard = make(dbName)
        const [first, second] = guardsFirst ? [guard, ledger] : [ledger, guard]
        await first.use(1)
        await second.use(2)
        await first.use(3)
        await second.use(4)
        // New handles, as after a reload, open the upgraded database as it is.
        const again = [ledgerOn(dbName), make(dbName)]
        for (const [i, s] of again.entries()) await s.use(5 + i)
        for (const s of [ledger, guard, ...again]) await s.close()
        indexedDB.deleteDatabase(dbName)
      })
    }
  }
})
