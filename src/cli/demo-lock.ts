// One demo per directory at a time: two at once append to the same receipt file under different keys (each then
// reports the other's receipts as forged), and a second `demo --serve` would rewrite the files the first serves.
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
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
 * Removes a stale lock that still holds `text`, under `<lock>.takeover` (mkdir is atomic): two demos that both read
 * it stale would otherwise each remove the lock the other had just taken. False when another demo is taking it over.
 */
function takeOver(path: string, text: string): boolean {
  const guard = `${path}.takeover`
  try {
    mkdirSync(guard)
  } catch {
    // A takeover that crashed leaves its guard: old ones are cleared for the next try.
    try {
      if (Date.now() - statSync(guard).mtimeMs > 10_000) rmSync(guard, { recursive: true, force: true })
    } catch {}
    return false
  }
  try {
    let now: string | null = null
    try {
      now = readFileSync(path, "utf8")
    } catch {}
    if (now === text) rmSync(path, { force: true })
  } finally {
    rmSync(guard, { recursive: true, force: true })
  }
  return true
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
    let text: string | null = null
    let stale = false
    try {
      text = readFileSync(path, "utf8")
      pid = Number(text)
      stale = pid > 0 ? pid === process.pid || !alive(pid) : Date.now() - statSync(path).mtimeMs > 10_000
    } catch {
      stale = true // released meanwhile: try again
    }
    if (!stale || attempt > 2 || (text !== null && !takeOver(path, text)))
      throw new DemoBusyError(
        `demo: another demo${pid > 0 ? ` (pid ${pid})` : ""} is running in ${dir}, or serving its ledger: ` +
          `stop it, or pass --ledger a path in another directory (none running? remove ${path})`,
      )
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
