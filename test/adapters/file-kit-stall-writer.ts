// A writer for file-kit-stall.test.ts: claims new task ids (`tasks`) or saves new snapshots (`state`) in the file
// store until killed, printing each id it recorded.
import { FileStateFlushStore } from "../../src/adapters/file-state.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { snapshot, taskRecord } from "./file-kit-stall-rows.ts"

const [kind, path, tag] = process.argv.slice(2) as [string, string, string]
const options = { staleLockAfter: 1, lockTimeout: 20, fsync: false }
const tasks = new FileTaskStore(path, options)
const state = new FileStateFlushStore(path, options)
for (let i = 0; ; i++) {
  const id = `${tag}-${String(i).padStart(6, "0")}`
  try {
    if (kind === "tasks") {
      if ((await tasks.swap(id, null, taskRecord(id, tag))) !== null) process.stdout.write(`${id}\n`)
    } else {
      await state.save(snapshot(id))
      process.stdout.write(`${id}\n`)
    }
  } catch {
    // its lock was taken over while it was stopped: this write was refused, the next one retries
  }
}
