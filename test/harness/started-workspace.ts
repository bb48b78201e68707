// What the workspace tests share: a started workspace stopped after each test, cleanups that run then too, an
// observation checked for its kind (its JSON in the failure message) before it is read, and waiting helpers.
import { readFileSync } from "node:fs"
import { afterEach, expect } from "vitest"
import {
  createWorkspace,
  type DevWorkspace,
  type WorkspaceObservation,
} from "../../src/harness/workspace/index.ts"

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const f of cleanups.splice(0)) await f()
})

/** Runs `f` after the current test, pass or fail. */
export function afterTest(f: () => Promise<void> | void): void {
  cleanups.push(f)
}

export async function startedWorkspace(
  options: Parameters<typeof createWorkspace>[0] = {},
): Promise<DevWorkspace> {
  const w = createWorkspace(options)
  await w.start()
  afterTest(() => w.stop())
  return w
}

export function observed<K extends WorkspaceObservation["kind"]>(o: WorkspaceObservation, kind: K) {
  expect(o.kind, JSON.stringify(o)).toBe(kind)
  return o as Extract<WorkspaceObservation, { kind: K }>
}

/** `p`, or a rejection once `ms` have passed: a hang fails its test instead of the whole run. */
export async function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Whether process `pid` still runs (Linux). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    // A killed job is a zombie until whoever adopted it reaps it: that counts as gone.
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return false
  }
}
