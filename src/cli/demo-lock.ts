// One demo per directory at a time: two at once append to the same receipt file under different keys (each then
// reports the other's receipts as forged), and a second `demo --serve` would rewrite the files the first serves.
import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { CliError } from "./errors.ts"

/** Another demo holds the directory: not a failed demo check (1), so exit 2. */
class DemoBusyError extends CliError {
  override readonly name = "DemoBusyError"
  override readonly code = "demo_busy"
  override readonly exitCode = 2
}

// process.kill(pid, 0) tests a pid without signalling it: EPERM is a live process of another user.
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as { code?: string }).code === "EPERM"
  }
}

/**
 * Takes `<dir>/.demo.lock` (O_EXCL) until this process exits or is stopped by a signal. A lock whose process is
 * gone (killed with SIGKILL, say) is taken over; one still empty is a demo that is writing it, unless it is old.
 */
export function lockDemoDir(dir: string): void {
  const path = join(dir, ".demo.lock")
  const mine = String(process.pid)
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(path, mine, { flag: "wx" })
      break
    } catch (e) {
      if ((e as { code?: string }).code !== "EEXIST") throw e
    }
    let pid = 0
    let stale = false
    try {
      pid = Number(readFileSync(path, "utf8"))
      stale = pid > 0 ? pid === process.pid || !alive(pid) : Date.now() - statSync(path).mtimeMs > 10_000
    } catch {
      stale = true // released meanwhile: try again
    }
    if (!stale || attempt > 1)
      throw new DemoBusyError(
        `demo: another demo${pid > 0 ? ` (pid ${pid})` : ""} is running in ${dir}, or serving its ledger: ` +
          `stop it, or pass --ledger a path in another directory (none running? remove ${path})`,
      )
    rmSync(path, { force: true })
  }
  const release = (): void => {
    try {
      if (readFileSync(path, "utf8") === mine) rmSync(path)
    } catch {}
  }
  process.once("exit", release)
  // Ctrl-C on `demo --serve`: a signal's default action skips "exit", so the lock is removed here, then the same
  // signal ends the process as it would have.
  for (const signal of ["SIGINT", "SIGTERM"] as const)
    process.once(signal, () => {
      release()
      process.kill(process.pid, signal)
    })
}
