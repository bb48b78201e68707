// One command in a fresh `bash -c`, with the workspace's stateful cwd: the script cds to the remembered cwd,
// runs the command, then writes `pwd` to a marker the workspace reads back. A command that calls `exit` leaves
// the cwd unchanged. On timeout or abort the whole process group is killed. The result comes when the shell exits,
// not when every background job it started has closed the pipes; those jobs live on in the group, which the caller
// kills with `killGroup` when it is done with them (the workspace does on stop()).
import { spawn } from "node:child_process"
import type { Readable } from "node:stream"
import { startTimer } from "../../core/harness/timer.ts"

export const MAX_STREAM_CHARS = 16_384
// Bytes kept per stream while reading: enough for 16,384 chars of any UTF-8, without buffering unbounded output.
const KEEP_BYTES = MAX_STREAM_CHARS * 4
// How long output may still arrive after the shell exits. A background job that inherited the pipes can hold them
// open for as long as it runs; the command is over when the shell is, so that job is not waited for.
const EXIT_GRACE_MS = 100

export interface ShellResult {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
  readonly timedOut: boolean
}

export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`
}

class Capture {
  #chunks: Buffer[] = []
  #bytes = 0
  constructor(readonly keep: "head" | "tail") {}
  push(b: Buffer): void {
    if (this.keep === "head") {
      if (this.#bytes >= KEEP_BYTES) return
      this.#chunks.push(b)
      this.#bytes += b.byteLength
      return
    }
    this.#chunks.push(b)
    this.#bytes += b.byteLength
    while (this.#bytes - (this.#chunks[0]?.byteLength ?? 0) >= KEEP_BYTES) {
      this.#bytes -= (this.#chunks.shift() as Buffer).byteLength
    }
  }
  text(): string {
    return new TextDecoder("utf-8").decode(Buffer.concat(this.#chunks))
  }
}

export interface RunShellOptions {
  readonly command: string
  readonly cwd: string
  /** Where the shell should start; a failing cd is ignored (the command then runs in `fallbackCwd`). */
  readonly startDir: string
  readonly markerFile: string
  readonly env: Readonly<Record<string, string>>
  readonly timeoutSeconds: number
  readonly keep: "head" | "tail"
  readonly signal?: AbortSignal
  /** The command's process group is added while it may still have members, and removed once this kills it. */
  readonly groups?: Set<number>
}

/** Signals a process group (SIGKILL, or 0 to probe it); one already gone is false, not an error. */
export function killGroup(pgid: number, signal: "SIGKILL" | 0 = "SIGKILL"): boolean {
  try {
    process.kill(-pgid, signal)
    return true
  } catch {
    return false
  }
}

export function runShell(o: RunShellOptions): Promise<ShellResult> {
  // The command arrives in a variable and runs through `eval`, so nothing it ends with (`\`, `&&`, an open
  // quote) can join the lines after it: its status is always the one recorded.
  const script = [
    "__mycelium_cmd=$__MYCELIUM_CMD",
    "unset __MYCELIUM_CMD",
    `cd -- ${shellQuote(o.startDir)} 2>/dev/null`,
    'eval "$__mycelium_cmd"',
    "__mycelium_rc=$?",
    `pwd > ${shellQuote(o.markerFile)}`,
    "exit $__mycelium_rc",
  ].join("\n")
  // Cancelled before the spawn (during the caller's awaits: start, policy gate): the command never runs, and the
  // result is the one a kill right after the spawn gives.
  if (o.signal?.aborted) return Promise.resolve({ exitCode: 128, stdout: "", stderr: "", timedOut: false })
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", script], {
      cwd: o.cwd,
      env: { ...process.env, ...o.env, __MYCELIUM_CMD: o.command },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true, // its own process group, so a timeout kills what it started too
    })
    const pgid = child.pid
    if (pgid !== undefined) o.groups?.add(pgid)
    const out = new Capture(o.keep)
    const err = new Capture(o.keep)
    const streams: Readable[] = [child.stdout, child.stderr]
    child.stdout.on("data", (b: Buffer) => out.push(b))
    child.stderr.on("data", (b: Buffer) => err.push(b))
    let timedOut = false
    let done = false
    let grace: ReturnType<typeof setTimeout> | undefined
    const kill = () => {
      if (pgid === undefined || !killGroup(pgid)) child.kill("SIGKILL")
      // Gone now: a stale id must not be signalled later, when the system may have reused it.
      if (pgid !== undefined) o.groups?.delete(pgid)
      // A process that left the group (setsid) survives the kill and may hold the pipes: stop reading them.
      for (const s of streams) s.destroy()
    }
    const timer = startTimer(o.timeoutSeconds * 1000, () => {
      timedOut = true
      kill()
    })
    const onAbort = () => kill()
    o.signal?.addEventListener("abort", onAbort, { once: true })
    const settle = () => {
      done = true
      timer.clear()
      clearTimeout(grace)
      o.signal?.removeEventListener("abort", onAbort)
    }
    let status = 1
    const finish = () => {
      if (done) return
      settle()
      // Background jobs keep running: drain what they write instead of closing the pipe (which would SIGPIPE them).
      for (const s of streams) {
        s.removeAllListeners("data")
        s.resume()
        ;(s as { unref?: () => void }).unref?.()
      }
      if (timedOut)
        resolve({
          exitCode: 124,
          stdout: "",
          stderr: `command timed out after ${o.timeoutSeconds}s`,
          timedOut,
        })
      else resolve({ exitCode: status, stdout: out.text(), stderr: err.text(), timedOut })
    }
    child.on("error", (e) => {
      if (done) return
      settle()
      reject(e)
    })
    child.on("exit", (code, signal) => {
      status = code ?? (signal ? 128 : 1)
      timer.clear() // the command has finished: a timeout during the grace must not turn it into a 124
      grace = setTimeout(finish, EXIT_GRACE_MS)
    })
    child.on("close", finish)
  })
}
