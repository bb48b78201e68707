// Shared by the harness tests: an event recorder and small plan builders.
import { expect } from "vitest"
import {
  type RunEvent,
  RunFailed,
  type RunResult,
  type RunTask,
  type TaskEvent,
} from "../../../src/core/harness/index.ts"
import type { LedgerStorage } from "../../../src/core/storage/contract.ts"

export function recorder(): { events: RunEvent[]; onEvent: (e: RunEvent) => void } {
  const events: RunEvent[] = []
  return { events, onEvent: (e) => events.push(e) }
}

export function task(task_id: string, depends_on: string[] = [], prompt = `do ${task_id}`): RunTask {
  return { task_id, prompt, depends_on }
}

export async function failed(p: Promise<RunResult>): Promise<RunFailed> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(RunFailed)
  return err as RunFailed
}

export function taskEvents(events: readonly RunEvent[], taskId?: string): TaskEvent[] {
  return events.filter(
    (e): e is TaskEvent => "task_id" in e && (taskId === undefined || e.task_id === taskId),
  )
}

export function indexOfEvent(events: readonly RunEvent[], type: string, taskId?: string): number {
  return events.findIndex(
    (e) => e.type === type && (taskId === undefined || ("task_id" in e && e.task_id === taskId)),
  )
}

/** Peak number of tasks between their start and terminal event, in sink order (invariant 6). */
export function peakRunning(events: readonly RunEvent[]): number {
  let running = 0
  let peak = 0
  for (const e of events) {
    if (e.type === "task_started") peak = Math.max(peak, ++running)
    if (e.type === "task_succeeded" || e.type === "task_failed" || e.type === "task_cancelled") running--
  }
  return peak
}

const TERMINAL = new Set(["task_succeeded", "task_failed", "task_cancelled"])

/** The §3.2 ordering invariants 1-7, plus per-run contiguous sequences and unique event ids. */
export function checkInvariants(
  events: readonly RunEvent[],
  result: RunResult,
  maxConcurrency: number,
): void {
  expect(events[0]?.type).toBe("run_started")
  expect(events[0]?.sequence).toBe(1)
  const last = events[events.length - 1]
  expect(last?.type).toBe("run_finished")
  expect(last?.run_id).toBe(result.run_id)
  expect(last?.sequence).toBe(result.last_sequence)
  expect(events.filter((e) => e.type === "run_finished")).toHaveLength(1)
  const byRun = new Map<string, RunEvent[]>()
  for (const e of events) byRun.set(e.run_id, [...(byRun.get(e.run_id) ?? []), e])
  for (const [, list] of byRun) expect(list.map((e) => e.sequence)).toEqual(list.map((_, i) => i + 1))
  expect(new Set(events.map((e) => e.event_id)).size).toBe(events.length)
  for (const e of events) expect(e.event_id).toBe(`${e.run_id}#${e.sequence}`)
  for (const [runId, list] of byRun) {
    if (runId === result.run_id) continue
    expect(list[0]?.type).toBe("task_started")
    expect(list.filter((e) => TERMINAL.has(e.type))).toHaveLength(1)
    expect(TERMINAL.has(list[list.length - 1]?.type as string)).toBe(true)
  }
  for (const e of events) {
    if (e.type !== "task_started") continue
    const at = events.indexOf(e)
    for (const d of e.depends_on) {
      const done = indexOfEvent(events, "task_succeeded", d)
      expect(done).toBeGreaterThanOrEqual(0)
      expect(done).toBeLessThan(at)
    }
  }
  for (const t of result.tasks)
    if (t.status === "not_started") expect(taskEvents(events, t.task_id)).toEqual([])
  expect(peakRunning(events)).toBeLessThanOrEqual(maxConcurrency)
}

/** Every string in a result tree. */
export function allStrings(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value)
  else if (value && typeof value === "object") for (const v of Object.values(value)) allStrings(v, out)
  return out
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/**
 * `store` whose calls about a row (an id, or an entry's request id) first wait `delayOf(id)` ms, as a slower round
 * trip would; list() hands back its iterable at once (a durable run lists its rows before its first task).
 */
export function delayedStore(
  store: LedgerStorage,
  delayOf: (id: string) => number,
  wait: (ms: number) => Promise<void> = sleep,
): LedgerStorage {
  return new Proxy(store, {
    get(target, prop) {
      const v: unknown = Reflect.get(target, prop, target)
      if (typeof v !== "function") return v
      if (prop === "list") return v.bind(target)
      return async (...args: unknown[]) => {
        const a = args[0] as { requestId?: unknown } | string | null
        const id = typeof a === "string" ? a : a?.requestId
        const ms = typeof id === "string" ? delayOf(id) : 0
        if (ms > 0) await wait(ms)
        return (v as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
}
