// A writer of the file ledger that parks inside one lock window (MYCELIUM_TEST_LOCK_PARK) so the parent can
// SIGKILL it exactly there. argv: ledgerPath [python-lock] (python-lock: hold the original's flock too)

import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import "./file-lock-park.ts"

const storage = new FileLedgerStorage(process.argv[2] as string, {
  lockTimeout: 60,
  pythonLock: process.argv[3] === "python-lock",
})
await storage.set(newEntry({ requestId: `child-${process.pid}`, tool: "t" }, 1))
process.stderr.write("WROTE\n")
