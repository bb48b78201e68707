// The README's main command, end to end: the demo runs, then the local ledger API serves its ledger file.
import { spawn, spawnSync } from "node:child_process"
import { once } from "node:events"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { parseReceiptJson } from "../../src/adapter-kit.ts"
import { type Receipt, verifyReceipts } from "../../src/receipts.ts"
import { tempDirs } from "../temp-dirs.ts"

const freshDir = tempDirs("mycelium-demo-")
const tmpLedger = () => {
  const dir = freshDir()
  return join(dir, "ledger.json")
}

describe("mycelium demo --serve", () => {
  it("shows the duplicate, the fix and the hard block, then serves the demo ledger over HTTP", async () => {
    const ledgerPath = tmpLedger()
    const child = spawn(process.execPath, [
      "--import",
      "tsx",
      "src/cli/main.ts",
      "demo",
      "--serve",
      "--port",
      "0",
      "--ledger",
      ledgerPath,
    ])
    let out = ""
    child.stderr.on("data", (d) => {
      out += String(d)
    })
    try {
      const base = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no API after 30 s:\n${out}`)), 30_000)
        child.stdout.on("data", (d) => {
          out += String(d)
          const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)
          if (m?.[1]) {
            clearTimeout(timer)
            resolve(m[1])
          }
        })
        child.once("exit", (code) => reject(new Error(`demo exited ${code}:\n${out}`)))
      })
      expect(out).toContain("unguarded executions: 2")
      expect(out).toContain("guarded executions: 1")
      expect(out).toContain("redispatch -> LedgerHardBlockError")
      expect(out).toContain("re-runs after release: 1")

      const res = await fetch(`${base}/v1/transitions`)
      const { transitions } = (await res.json()) as { transitions: Array<Record<string, unknown>> }
      expect(transitions.map((t) => [t.tool, t.terminal_outcome]).sort()).toEqual([
        ["send_payment", "COMPLETED"],
        ["subagent_task", "COMPLETED"],
      ])
      const released = transitions.find((t) => t.tool === "send_payment")
      // The one-shot release was spent by the re-run; who released it stays on the row.
      expect(released).toMatchObject({ operator_resolution: null, resolved_by: "ops@example.com" })
      const bad = await fetch(`${base}/v1/transitions/x/release`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{",
      })
      expect(bad.status).toBe(400)
      // The file is the Python original's layout: one JSON object keyed by request id.
      const file = JSON.parse(readFileSync(ledgerPath, "utf8")) as Record<string, { request_id: string }>
      for (const [k, v] of Object.entries(file)) expect(v.request_id).toBe(k)

      // The tour's receipts are served too, and verify offline with the demo key the banner prints.
      const key = /MYCELIUM_SIGNING_KEY=(demo-[0-9a-f]{8}) /.exec(out)?.[1]
      expect(key, out).toBeDefined()
      expect(out).toContain(`receipts export --url ${base} -o .mycelium/audit.jsonl`)
      const exported = await fetch(`${base}/v1/receipts?format=jsonl`)
      const lines = (await exported.text()).trim().split("\n")
      const receipts = lines.map((l) => parseReceiptJson(l) as Receipt)
      expect(receipts.map((r) => [r.action, r.status])).toEqual([
        ["subagent_task", "completed"],
        ["send_payment", "failed"],
        ["send_payment", "completed"],
      ])
      const report = await verifyReceipts(receipts, { hmac: key as string }, { requireChain: true })
      expect(report).toMatchObject({ ok: true, valid: 3 })
    } finally {
      child.kill("SIGTERM")
      // Its ledger dir is removed after the file's tests; the server must be gone by then.
      if (child.exitCode === null && child.signalCode === null) await once(child, "exit")
    }
  })

  it("from a checkout, its inspect hint is a command that works there (no bin is linked in a checkout)", () => {
    const ledgerPath = tmpLedger()
    const demo = spawnSync(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", "demo", "--ledger", ledgerPath],
      {
        encoding: "utf8",
        env: { ...process.env, NO_COLOR: "1" },
      },
    )
    expect(demo.status, demo.stderr).toBe(0)
    const hint = /inspect: (.+?) transitions list --file (\S+?)\)/.exec(demo.stdout)
    expect(hint?.slice(1)).toEqual(["npx tsx src/cli/main.ts", ledgerPath])
    const [cmd, ...args] = (hint?.[1] ?? "").split(" ")
    const listed = spawnSync(cmd as string, [...args, "transitions", "list", "--file", ledgerPath], {
      encoding: "utf8",
    })
    expect(listed.status, listed.stderr).toBe(0)
    expect(listed.stdout).toContain("send_payment")
  })
})
