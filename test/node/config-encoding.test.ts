// loadConfig reads a file's bytes as PyYAML does: UTF-8, or UTF-16 after its BOM; other bytes are an error at their
// line and column (decoded as U+FFFD, Latin-1 `café` and `cafè` were one agent_id: one agent's payment replayed the
// other's result). A file over 1 MiB is refused from its size, before it is read.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { ConfigError } from "../../src/core/config/index.ts"
import { loadConfig } from "../../src/node/config.ts"

const dir = mkdtempSync(join(tmpdir(), "mycelium-encoding-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const T = "transition:\n  agent_id: caf\u00e9\n  policy_version: v1\n"
let n = 0

const file = (bytes: Uint8Array): string => {
  const path = join(dir, `c${n++}.yaml`)
  writeFileSync(path, bytes)
  return path
}
const refused = async (path: string): Promise<ConfigError> => {
  const e = await loadConfig(path).then(
    () => undefined,
    (err: unknown) => err,
  )
  expect(e).toBeInstanceOf(ConfigError)
  return e as ConfigError
}
const utf16 = (text: string, le: boolean): Uint8Array => {
  const out = Buffer.from(`\ufeff${text}`, "utf16le")
  return le ? out : out.swap16()
}

describe("the bytes of a config file", () => {
  it("Latin-1 é and è are refused at the first invalid byte, not both read as U+FFFD", async () => {
    for (const b of [0xe9, 0xe8]) {
      const e = await refused(
        file(Buffer.concat([Buffer.from("transition:\n  agent_id: caf"), Buffer.from([b, 0x0a])])),
      )
      expect([e.line, e.column]).toEqual([2, 16])
      expect(e.message).toContain(`:2:16: not valid UTF-8 (byte 0x${b.toString(16)}`)
    }
  })

  it("a U+FFFD written in the file is text, and the error is at the invalid byte after it", async () => {
    const e = await refused(file(Buffer.concat([Buffer.from("# \ufffd\nx: \ufffd "), Buffer.from([0xff])])))
    expect([e.line, e.column]).toEqual([2, 6])
    expect(e.message).toContain("byte 0xff")
  })

  // Each U+FFFD re-encoded the text before it to find the bytes: 80,000 took 10 s and 300,000 (1 MiB holds them)
  // minutes, past the test's timeout.
  it("300,000 U+FFFD written in the file before an invalid byte are passed in one walk", async () => {
    const text = Buffer.from(`${T}# ${"\ufffd".repeat(300_000)}\nx: caf`)
    const e = await refused(file(Buffer.concat([text, Buffer.from([0xe9, 0x0a])])))
    expect([e.line, e.column]).toEqual([5, 7])
  })

  it("a lone CR breaks lines before an invalid byte, as it does for the parser", async () => {
    const e = await refused(file(Buffer.from("transition:\r  agent_id: caf\xe9\r", "latin1")))
    expect([e.line, e.column]).toEqual([2, 16])
  })

  it("UTF-16 LE and BE after their BOM load, and so does UTF-8 with its BOM", async () => {
    for (const bytes of [utf16(T, true), utf16(T, false), Buffer.from(`\ufeff${T}`)])
      expect((await loadConfig(file(bytes))).transition?.agentId).toBe("caf\u00e9")
  })

  it("UTF-16 that does not decode is refused, naming it", async () => {
    const bytes = Buffer.concat([utf16(T, true), Buffer.from([0x00, 0xd8, 0x41, 0x00])])
    const e = await refused(file(bytes))
    expect([e.line, e.column]).toEqual([4, 1])
    expect(e.message).toContain("not valid UTF-16LE")
  })

  // PyYAML refuses them too (unacceptable character): decoded, they would reach the parser as text.
  it("a control character in UTF-8 or UTF-16 is refused at its line and column, past a BOM and CRLF", async () => {
    const text = `${T}# \x1b[31m red\n`.replace(/\n/g, "\r\n")
    for (const bytes of [utf16(text, true), utf16(text, false), Buffer.from(`\ufeff${text}`)]) {
      const e = await refused(file(bytes))
      expect([e.line, e.column, e.detail.slice(0, 16)]).toEqual([4, 3, "character U+001B"])
    }
  })

  it("a file over 1 MiB is refused before it is read", async () => {
    const e = await refused(file(Buffer.from(`${T}#${"x".repeat(2 ** 20)}\n`)))
    expect(e.message).toContain("over 1 MiB")
  })
})
