// Rows shared by file-kit-stall.test.ts and its writer: a claimed task, a state snapshot.
import type { StateSnapshot } from "../../src/core/state/snapshot.ts"
import type { TaskRecord } from "../../src/core/tasks/record.ts"

export function taskRecord(id: string, owner: string, pad = ""): TaskRecord {
  const now = Date.now() / 1000
  return {
    row: {
      request_id: id,
      task: "t",
      args: pad ? [pad] : [],
      kwargs: {},
      status: "in-flight",
      result: null,
      error: null,
      started_at: now,
      finished_at: null,
    },
    lease: { fence: 1, owner, lease_until: now + 600, heartbeat_at: now, started_at: now },
  }
}

export const snapshot = (id: string): StateSnapshot => ({
  run_id: id,
  status: "in-progress",
  state: {},
  updated_at: 1,
  reason: null,
  error: null,
})
