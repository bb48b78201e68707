// Imported by the kill tests' writer children: MYCELIUM_TEST_LOCK_PARK=<window> parks the process (blocks it for
// good) inside that window of the file lock protocol and says so on stderr, so the parent SIGKILLs it there. The
// windows: lock-tmp, lock-linked, lock-held, gc-tmp, gc-linked, gc-held (file-kit.ts) and flush-tmp (file.ts).
import { writeSync } from "node:fs"
import { lockWindows } from "../../src/adapters/file-kit.ts"

const parkIn = process.env.MYCELIUM_TEST_LOCK_PARK
if (parkIn)
  lockWindows.park = (step, target) => {
    // A temp record's steps name the file it is linked to: the lock itself (`<data>.lock.ts`) or a gc marker.
    const window = target === undefined ? step : `${target.endsWith(".lock.ts") ? "lock" : "gc"}-${step}`
    if (window !== parkIn) return
    writeSync(2, `PARKED ${window} ${process.pid}\n`)
    // Synchronous and forever: the parent SIGKILLs us here, mid-window, with nothing left to run.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)
  }
