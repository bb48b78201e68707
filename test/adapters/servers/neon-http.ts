// Starts scripts/neon-http-server.mjs, an EMULATION of Neon's HTTP /sql endpoint over the local Postgres, so the
// driver's `neon()` path runs for real against Postgres. It is not Neon's proxy.
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

export interface NeonHttpEmulation {
  readonly endpoint: string
  requests(): Promise<number>
  stop(): Promise<void>
}

const SCRIPT = fileURLToPath(new URL("../../../scripts/neon-http-server.mjs", import.meta.url))

export async function startNeonHttpEmulation(): Promise<NeonHttpEmulation> {
  const child: ChildProcess = spawn(process.execPath, [SCRIPT], {
    env: { ...process.env, NEON_HTTP_PORT: "0" },
    stdio: ["ignore", "pipe", "inherit"],
  })
  const endpoint = await new Promise<string>((resolve, reject) => {
    let out = ""
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString()
      const m = /(http:\/\/\S+\/sql)/.exec(out)
      if (m?.[1]) resolve(m[1])
    })
    child.once("exit", (code) => reject(new Error(`neon-http emulation exited with ${code}`)))
    setTimeout(() => reject(new Error("neon-http emulation did not start in 10 s")), 10_000).unref()
  })
  return {
    endpoint,
    async requests() {
      const r = await fetch(endpoint.replace(/\/sql$/, "/stats"))
      return ((await r.json()) as { requests: number }).requests
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
      }),
  }
}
