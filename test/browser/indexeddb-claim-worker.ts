// A dedicated Worker racing claims of one request id on its own IndexedDB connection, as another tab would.
import { newEntry } from "../../src/adapter-kit.ts"
import { IndexedDbLedgerStorage } from "../../src/adapters/indexeddb.ts"

interface Job {
  readonly dbName: string
  readonly id: string
  readonly n: number
  readonly tag: string
}

self.onmessage = async (ev: MessageEvent<Job>) => {
  const { dbName, id, n, tag } = ev.data
  const s = new IndexedDbLedgerStorage({ dbName })
  const now = Date.now() / 1000
  const outcomes = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const owner = `${tag}-${i}`
      const r = await s.tryClaimInflight(newEntry({ requestId: id, tool: "send", owner }, now), 60, now)
      if (r.outcome !== "claimed") return r.outcome
      const ok = await s.tryTransition(
        { ...r.entry, terminalOutcome: "COMPLETED", status: "completed", result: owner },
        { outcomes: ["IN_FLIGHT"], owner, fence: r.entry.fence },
      )
      return ok ? "claimed" : "lost"
    }),
  )
  await s.close()
  postMessage(outcomes)
}
