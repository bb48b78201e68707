// A stored task row that is not a task ledger entry: the file, IndexedDB, Durable Object and Neon task stores quoted
// its id whole (a 1 MB task_id made a 1 MB error) where the Upstash store quotes it clipped, as every task ledger
// text does. The errors keep their class and code.
import "fake-indexeddb/auto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, expect, it } from "vitest"
import { GuardTables, type SqlStorageLike } from "../../src/adapters/durable-object-guards.ts"
import { LedgerFileCorruptError } from "../../src/adapters/file-kit.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { IndexedDbTaskStore } from "../../src/adapters/indexeddb-guards.ts"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import { TaskRowError } from "../../src/tasks.ts"
import { runTag } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const id = `job-${"x".repeat(1024 * 1024)}`
const shown = `'${id.slice(0, 300)}...'`
const row = {
  request_id: id,
  task: "job",
  args: [],
  kwargs: {},
  status: "in-flight",
  result: null,
  error: null,
}
const dir = mkdtempSync(join(tmpdir(), "mycelium-task-clip-"))
const table = runTag("task_clip").replaceAll("-", "_")
const pool = neonPool(undefined, 2)

beforeAll(() => requirePostgres(pool))
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await pool.query(`DROP TABLE IF EXISTS ${table}`)
  await pool.end()
})

/** What `p` rejects with: under 2,000 characters, quoting the id clipped once. */
async function refusal(p: Promise<unknown>): Promise<Error> {
  const e = await p.then(
    () => new Error("expected a refusal"),
    (err: unknown) => err as Error,
  )
  expect(e.message.length).toBeLessThan(2000)
  expect(e.message.split(shown)).toHaveLength(2)
  return e
}

it("the file store: a row, then a lease, that is not its kind", async () => {
  const path = join(dir, "tasks.json")
  writeFileSync(path, JSON.stringify({ [id]: { request_id: id } }))
  const store = new FileTaskStore(path)
  expect(await refusal(store.get(id))).toBeInstanceOf(LedgerFileCorruptError)
  writeFileSync(path, JSON.stringify({ [id]: row }))
  writeFileSync(`${path}.leases.json`, JSON.stringify({ [id]: { owner: 5 } }))
  expect(await refusal(store.get(id))).toBeInstanceOf(LedgerFileCorruptError)
})

it("the IndexedDB store", async () => {
  const dbName = `mycelium-task-clip-${Date.now()}`
  const store = new IndexedDbTaskStore({ dbName })
  expect(await store.get(id)).toBeNull()
  // Another writer's value in the store's own object store.
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const open = indexedDB.open(dbName)
    open.onsuccess = () => resolve(open.result)
    open.onerror = () => reject(open.error)
  })
  await new Promise<void>((resolve, reject) => {
    const tx = db.transaction(["tasks"], "readwrite")
    tx.objectStore("tasks").put({ request_id: id, row: { request_id: id }, lease: null })
    tx.oncomplete = () => resolve()
    tx.onerror = () => reject(tx.error)
  })
  db.close()
  expect(await refusal(store.get(id))).toBeInstanceOf(TaskRowError)
  await store.close()
})

it("the Durable Object's tables", async () => {
  const sql: SqlStorageLike = {
    exec: (query) => {
      const rows = query.startsWith("SELECT")
        ? [{ payload: JSON.stringify({ request_id: id }), lease: null }]
        : []
      return Object.assign(rows, { toArray: () => rows })
    },
  }
  const e = await refusal(Promise.resolve().then(() => new GuardTables(sql).taskGet(id)))
  expect(e).toBeInstanceOf(TaskRowError)
})

it("the Neon store", async () => {
  const store = new NeonTaskStore({ pool, table })
  await store.migrate()
  // A btree key holds 2,704 bytes compressed: 200,000 characters of one letter fit, a megabyte does not.
  const long = id.slice(0, 200_000)
  await pool.query(`INSERT INTO ${table} (request_id, payload) VALUES ($1, $2)`, [
    long,
    JSON.stringify({ a: 1 }),
  ])
  expect(await refusal(store.get(long))).toBeInstanceOf(TaskRowError)
})
