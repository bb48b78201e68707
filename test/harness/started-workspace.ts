// What the workspace tests share: a started workspace stopped after each test, cleanups that run then too, and an
// observation checked for its kind (its JSON in the failure message) before it is read.
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
