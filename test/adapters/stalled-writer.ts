// The file-store stall tests' shared step: stop (SIGSTOP) a writer process at an instant it holds the lock and has
// not begun a temp file, so that its resumed rewrite, if any landed, would be built on what it read before.
import type { ChildProcess } from "node:child_process"
import { readFileSync } from "node:fs"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** True once `writer` is stopped holding `lockFile` with no temp file (`hasTemp`); false after 3,000 tries. */
export async function stopHoldingLock(
  writer: ChildProcess,
  lockFile: string,
  hasTemp: () => boolean,
): Promise<boolean> {
  for (let tries = 0; tries < 3000; tries++) {
    writer.kill("SIGSTOP")
    await sleep(5)
    let holder = -1
    try {
      holder = JSON.parse(readFileSync(lockFile, "utf8")).pid
    } catch {
      // no lock held right now
    }
    if (holder === writer.pid && !hasTemp()) return true
    writer.kill("SIGCONT")
    await sleep(Math.random() * 5)
  }
  return false
}
