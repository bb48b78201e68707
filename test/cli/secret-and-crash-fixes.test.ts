// What a review found the CLI printing: a Node stack trace when `demo --store config` met a store that is down, a
// store client's message quoting a password in `doctor`, a `--url` echoed with its credentials, and raw ENOENT,
// ENOTDIR or InvalidTableNameError (exit 1) where the caller's path or flag is wrong (a usage error, exit 2).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { exportUrl } from "../../src/cli/receipts-export.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-secret-crash-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const run = cliRunner(cwd)
writeFileSync(join(cwd, "file"), "")

function oneLine(r: { err: string }): string {
  expect(r.err).not.toMatch(/\n\s+at |^\s+\^/m)
  const [first] = r.err.trim().split("\n")
  expect(first).toMatch(/^mycelium: /)
  return first as string
}

describe("demo --store config on a store that is down", () => {
  it("stops with one mycelium: line naming the outage (exit 1), no stack trace", () => {
    writeFileSync(
      join(cwd, "down.yaml"),
      "transition: {agent_id: a, policy_version: v}\n" +
        "action_ledger: {storage: redis, url: 'redis://127.0.0.1:1', tools: [t]}\ntools: {t: {side_effect_class: read}}\n",
    )
    const r = run(["demo", "--store", "config", "-c", "down.yaml"])
    expect(r.code, r.err).toBe(1)
    expect(oneLine(r)).toMatch(/^mycelium: LedgerStorageUnavailableError: ledger storage unavailable/)
    expect(r.err.trim().split("\n")).toHaveLength(1)
  })
})

describe("doctor hides a password a store client's message quotes", () => {
  // Refused when the config loads since Upstash's URL is checked there (an https:// REST URL), not by the client.
  it.each([[[]], [["--json"]]])("upstash with a redis:// URL %j", (extra) => {
    writeFileSync(
      join(cwd, "u.yaml"),
      "transition: {agent_id: a, policy_version: v}\n" +
        "action_ledger: {storage: upstash, url_env: UURL, token_env: UTOK, tools: [t]}\ntools: {t: {side_effect_class: read}}\n",
    )
    const r = run(["doctor", "-c", "u.yaml", "--timeout", "3", ...extra], {
      UURL: "redis://default:S3CRETPW@x.upstash.io:6379",
      UTOK: "tok",
    })
    expect(r.code, r.err).toBe(2)
    expect(oneLine(r)).toContain(
      "u.yaml:2:44 at 'action_ledger.url_env': the value of environment variable 'UURL' must be an https:// URL",
    )
    expect(r.out + r.err).not.toContain("S3CRETPW")
  })
})

describe("receipts export never echoes a --url's credentials or query", () => {
  it.each([
    "https://ops:S3CRETPW@ledger.example.com/",
    "https://ledger.example.com/?token=S3CRETPW",
    "https://ledger.example.com/#S3CRETPW",
    "ftp://ops:S3CRETPW@ledger.example.com/",
    "https//ops:S3CRETPW@ledger.example.com/",
  ])("%s", (url) => {
    expect(() => exportUrl({ url })).toThrow(/^--url/)
    expect(() => exportUrl({ url })).not.toThrow(/S3CRETPW/)
  })
  it("names the URL without them, through the CLI too", () => {
    const r = run(["receipts", "export", "--url", "https://ops:S3CRETPW@ledger.example.com/x?token=S3CRETPW"])
    expect(r.code).toBe(2)
    expect(oneLine(r)).toContain("--url https://ledger.example.com/x: pass the API's base URL alone")
    expect(r.err).not.toContain("S3CRETPW")
  })
})

describe("a path or --table the caller got wrong is a usage error (exit 2), not a raw Node error", () => {
  it.each([
    [["init", "-o", ""], /init: --output is empty/],
    [["init", "-o", "file/x"], /init: -o file\/x is below a file, not a folder/],
    [["demo", "--ledger", "file/x.json"], /demo: --ledger file\/x.json is below a file/],
    [["transitions", "list", "--file", "file/x.json"], /the ledger file file\/x.json is below a file/],
    [
      ["transitions", "list", "--postgres-dsn", "postgres://u@127.0.0.1:1/db", "--table", "x;drop"],
      /--table: /,
    ],
    [["tasks", "list", "--postgres-dsn", "postgres://u@127.0.0.1:1/db", "--table", "X"], /--table: /],
    // libpq's key=value form: node-postgres read it as a host named `base` (an outage, exit 1, misleading).
    [
      ["transitions", "list", "--postgres-dsn", "host=127.0.0.1 dbname=app password=S3CRET"],
      /--postgres-dsn must be a postgres:\/\/ URL/,
    ],
    [
      ["tasks", "list", "--postgres-dsn", "host=127.0.0.1 dbname=app"],
      /--postgres-dsn must be a postgres:\/\/ URL/,
    ],
  ])("%j", (args, text) => {
    const r = run(args)
    expect(r.code, r.err).toBe(2)
    expect(oneLine(r)).toMatch(text)
    expect(r.err).not.toMatch(/E(NOENT|NOTDIR|EXIST)|InvalidTableNameError/)
  })
})
