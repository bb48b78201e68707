// `receipts export -o FILE` builds FILE.partial-PID and renames it once every page has arrived, so a failed export
// leaves no shorter file that verifies as a shorter history. Ctrl-C (or a supervisor's SIGTERM) mid-export left the
// partial file behind: a shorter history under the output's name, one per interrupted run.
import { spawn } from "node:child_process"
import { once } from "node:events"
import { existsSync, readdirSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { tempDirs } from "../temp-dirs.ts"
import { cliCommand } from "./cli-bin.ts"

const cwd = tempDirs("mycelium-export-interrupted-")()
// Accepts and never answers: the export waits on its first page until the signal comes.
const silent: Server = createServer(() => {})
afterAll(() => {
  silent.close()
})

describe("receipts export -o, interrupted", () => {
  it.each(["SIGINT", "SIGTERM"] as const)(
    "by %s leaves no partial file, and ends by that signal",
    async (signal) => {
      if (!silent.listening) await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r))
      const { port } = silent.address() as { port: number }
      const out = join(cwd, `audit-${signal}.jsonl`)
      const [cmd, pre] = cliCommand()
      const child = spawn(
        cmd,
        [...pre, "receipts", "export", "--url", `http://127.0.0.1:${port}`, "-o", out, "--timeout", "60"],
        { cwd, env: { ...process.env, NO_COLOR: "1", MYCELIUM_TOKEN: "t" } },
      )
      let err = ""
      child.stderr.on("data", (d) => {
        err += String(d)
      })
      const partial = `${out}.partial-${child.pid}`
      const deadline = Date.now() + 20_000
      while (!existsSync(partial) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      expect(existsSync(partial), err).toBe(true)
      child.kill(signal)
      const [code, by] = (await once(child, "close")) as [number | null, string | null]
      expect([code, by]).toEqual([null, signal])
      expect(readdirSync(cwd).filter((f) => f.startsWith(`audit-${signal}`))).toEqual([])
      expect(err).toBe("")
    },
    30_000,
  )
})
