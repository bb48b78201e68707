// Random sequences of `swap` against a TaskStore and a model of its contract: a swap writes only when its expected
// version is the stored one (null: absent), and every read gives back what the last successful swap wrote, under the
// version that swap returned, which differs from the one before when the record changed (a renewal changes only the
// lease). The suite's TaskLedger cases race whole tasks; these check the one primitive they all stand on, including
// versions a writer kept from before another writer's swap.
import type { JsonValue } from "../core/index.ts"
import type { TaskLease, TaskRecord, TaskRow, TaskStore } from "../tasks.ts"
import { seededRandom } from "./random.ts"

/** Records compare by their JSON with sorted keys: member order and `undefined` members do not count. */
function text(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([p], [q]) => (p < q ? -1 : 1)))
      : x,
  )
}

/**
 * Runs one seeded sequence of `count` swaps over `ids` (alternating `store` and `peer`), reading every task back
 * through the other handle after each; then `list()`. Throws with the seed, the step and what differed.
 */
export async function runTaskSwapSequence(
  store: TaskStore,
  peer: TaskStore,
  ids: readonly string[],
  seed: number,
  count: number,
  t0: number,
): Promise<void> {
  const r = seededRandom(seed)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T
  // Per task: what the last successful swap wrote, its version, and every version seen for it before.
  const current = new Map<string, { record: TaskRecord; version: string }>()
  const earlier = new Map<string, { record: TaskRecord; version: string }[]>()
  for (let i = 0; i < count; i++) {
    const id = pick(ids)
    const now = current.get(id)
    const stale = (earlier.get(id) ?? []).filter((v) => text(v.record) !== text(now?.record))
    const expected = pick<string | null>([
      now?.version ?? null,
      now?.version ?? null,
      null,
      stale.length ? pick(stale).version : "v-never-issued",
      "v-never-issued",
    ])
    let next = record(id, i, t0, pick, r)
    // Some steps keep the row and change only the lease, as a renewal does.
    if (now && r() < 0.3) next = { row: now.record.row, lease: next.lease }
    const want = expected === (now?.version ?? null)
    const handle = i % 2 ? peer : store
    const got = await handle.swap(id, expected, next)
    const where = `seed ${seed}, step ${i} (swap '${id}' expecting ${JSON.stringify(expected)})`
    if ((got !== null) !== want)
      throw new Error(
        `${where}: swap ${got === null ? "refused" : "wrote"}; the contract says it ${want ? "writes" : "is refused"}`,
      )
    if (got !== null) {
      // A version that outlived a change (a digest without the lease) lets a worker that read a lease as lapsed before
      // its renewal take the task over from its live holder: the body runs twice.
      if (now && got === now.version && text(next) !== text(now.record))
        throw new Error(`${where}: the record changed and its version did not`)
      if (now) earlier.set(id, [...(earlier.get(id) ?? []), now])
      current.set(id, { record: next, version: got })
    }
    const reader = i % 2 ? store : peer
    for (const t of ids) {
      const stored = await reader.get(t)
      const model = current.get(t)
      const seen = stored && text({ lease: stored.lease, row: stored.row })
      if (
        seen !== (model ? text(model.record) : null) ||
        (stored?.version ?? null) !== (model?.version ?? null)
      )
        throw new Error(
          `${where}: task '${t}' reads ${text(stored)}; the contract says ${text(model ?? null)}`,
        )
    }
  }
  const listed = new Map<string, string>()
  for await (const t of store.list()) {
    if (!ids.includes(t.row.request_id)) continue
    if (listed.has(t.row.request_id))
      throw new Error(`seed ${seed}: list() yields '${t.row.request_id}' twice`)
    listed.set(t.row.request_id, text({ lease: t.lease, row: t.row }))
  }
  for (const t of ids)
    if ((listed.get(t) ?? null) !== (current.has(t) ? text(current.get(t)?.record) : null))
      throw new Error(`seed ${seed}: list() gives '${t}' as ${listed.get(t) ?? "absent"}`)
}

/** A record of any shape a ledger or the Python original writes: each status, with and without a lease. */
function record(
  id: string,
  i: number,
  t0: number,
  pick: <T>(xs: readonly T[]) => T,
  r: () => number,
): TaskRecord {
  const status = pick(["in-flight", "completed", "failed"] as const)
  const startedAt = t0 + pick([0, 0.5, 30.25])
  const row: TaskRow = {
    request_id: id,
    task: "report",
    args: [],
    kwargs: { day: "d", step: i },
    status,
    result: status === "completed" ? pick<JsonValue>([null, { n: i }, "done", 1.5]) : null,
    error: status === "failed" ? `RuntimeError: step ${i}` : null,
    started_at: startedAt,
    finished_at: status === "in-flight" ? null : startedAt + 1,
  }
  if (r() < 0.25) return { row, lease: null }
  const lease: TaskLease = {
    fence: i + 1,
    owner: pick(["w1", "w2"]),
    lease_until: pick([null, startedAt + 30]),
    heartbeat_at: startedAt,
    // Older than the row: a worker of the original re-claimed the task after this lease was taken.
    started_at: pick([startedAt, startedAt - 10]),
    ...pick([
      {},
      { receipt_ref: `rcpt-${i}` },
      { resolved_by: "ops", resolution_reason: "checked", resolved_at: t0 },
    ]),
  }
  return { row, lease }
}
