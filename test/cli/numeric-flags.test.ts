// Numeric flags take plain decimal numbers only. Number() reads far more: `doctor --timeout 0x10` waited 16 s,
// `--port 1e3` served on 1000, `--port 0x0` or ' 0' on a random port, `+5` and `0b101` were 5. Each is a usage
// error (exit 2) naming the flag, on every command that takes a number.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { UsageError } from "../../src/cli/errors.ts"
import { parsePort } from "../../src/cli/options.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-numeric-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
// A value read as a port would serve until killed: a null exit code then, never a hung suite.
const run = cliRunner(cwd, { timeout: 15_000 })
const config = join(cwd, "ok.yaml")
writeFileSync(
  config,
  `transition: {agent_id: a, policy_version: v}\naction_ledger: {storage: file, path: ${join(cwd, "l.json")}, tools: [t]}\ntools: {t: {side_effect_class: read}}\n`,
)

const NOT_DECIMAL = ["0x10", "1e1", " 5", "5 ", "5s", "+5", "0b101", "0o7", "Infinity"]

describe("numeric flags refuse what is not a plain decimal", () => {
  it.each(NOT_DECIMAL)("parsePort(%j) is a UsageError", (v) => {
    expect(() => parsePort(v)).toThrow(UsageError)
  })

  it("plain decimals still parse", () => {
    expect([parsePort(undefined), parsePort("0"), parsePort("8080"), parsePort("65535")]).toEqual([
      8787, 0, 8080, 65535,
    ])
    const ok = run(["doctor", "-c", config, "--timeout", "1.5"])
    expect(ok.code, ok.err).toBe(0)
  })

  it.each(NOT_DECIMAL)("doctor --timeout %j", (v) => {
    const r = run(["doctor", "-c", config, `--timeout=${v}`])
    expect(r.code, r.out).toBe(2)
    expect(r.err).toContain("--timeout must be a positive number of seconds")
  })

  it.each(["0x0", "1e3", " 0", "+0"])("serve and demo --port %j", (v) => {
    for (const args of [
      ["serve", `--port=${v}`, "--ledger", join(cwd, "s.json")],
      ["demo", "--store", "memory", `--port=${v}`],
    ]) {
      const r = run(args, { MYCELIUM_TOKEN: "" })
      expect(r.code, `${args.join(" ")}: ${r.out}`).toBe(2)
      expect(r.err).toContain("--port must be 0..65535")
    }
  })

  it.each(NOT_DECIMAL)("receipts export --timeout and --max-receipts %j, transitions --fence", (v) => {
    const url = ["receipts", "export", "--url", "http://127.0.0.1:1"]
    for (const [args, flag] of [
      [[...url, `--timeout=${v}`], "--timeout"],
      [[...url, `--max-receipts=${v}`], "--max-receipts"],
      [
        [
          "transitions",
          "mark-dead",
          "x",
          "--file",
          join(cwd, "l.json"),
          "--by",
          "o",
          "--reason",
          "r",
          `--fence=${v}`,
        ],
        "--fence",
      ],
    ] as const) {
      const r = run([...args])
      expect(r.code, `${args.join(" ")}: ${r.err}`).toBe(2)
      expect(r.err).toContain(flag)
    }
  })
})
