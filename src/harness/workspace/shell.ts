// One command in a fresh `bash -c`, with the workspace's stateful cwd: the script cds to the remembered cwd,
// runs the command, then writes `pwd` to a marker the workspace reads back. A command that calls `exit` leaves
// the cwd unchanged. On timeout or abort the whole process group is killed.
import { spawn } from "node:child_process"

export const MAX_STREAM_CHARS = 16_384
// Bytes kept per stream while reading: enough for 16,384 chars of any UTF-8, without buffering unbounded output.
const KEEP_BYTES = MAX_STREAM_CHARS * 4

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
}

export function runShell(o: RunShellOptions): Promise<ShellResult> {
  const script = [
    `cd -- ${shellQuote(o.startDir)} 2>/dev/null`,
    o.command,
    "__mycelium_rc=$?",
    `pwd > ${shellQuote(o.markerFile)}`,
    "exit $__mycelium_rc",
  ].join("\n")
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", script], {
      cwd: o.cwd,
      env: { ...process.env, ...o.env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true, // its own process group, so a timeout kills what it started too
    })
    const out = new Capture(o.keep)
    const err = new Capture(o.keep)
    child.stdout.on("data", (b: Buffer) => out.push(b))
    child.stderr.on("data", (b: Buffer) => err.push(b))
    let timedOut = false
    const kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL")
      } catch {
        child.kill("SIGKILL")
      }
    }
    const timer = setTimeout(() => {
      timedOut = true
      kill()
    }, o.timeoutSeconds * 1000)
    const onAbort = () => kill()
    o.signal?.addEventListener("abort", onAbort, { once: true })
    child.on("error", (e) => {
      clearTimeout(timer)
      o.signal?.removeEventListener("abort", onAbort)
      reject(e)
    })
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      o.signal?.removeEventListener("abort", onAbort)
      if (timedOut)
        resolve({
          exitCode: 124,
          stdout: "",
          stderr: `command timed out after ${o.timeoutSeconds}s`,
          timedOut,
        })
      else resolve({ exitCode: code ?? (signal ? 128 : 1), stdout: out.text(), stderr: err.text(), timedOut })
    })
  })
}
