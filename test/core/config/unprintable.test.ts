// PyYAML (the original's reader) refuses a stream holding a character outside YAML's printable set, wherever it is:
// `unacceptable character #x0007: special characters are not allowed`. Read here, one file meant one thing to a
// Python worker and another (or a raw ESC on a terminal) to this package. Outcomes checked against PyYAML 6.0.3.
import { describe, expect, it } from "vitest"
import { loadConfigFromString } from "../../../src/core/config/index.ts"
import { refusal } from "./refusal.ts"

const quiet = { onWarning: () => {}, env: {} }
const T = (id: string) => `transition:\n  agent_id: ${id}\n  policy_version: v1\n`
const agent = (id: string) => loadConfigFromString(T(id), quiet).transition?.agentId

// Each class PyYAML's reader refuses: C0 but TAB, LF and CR; DEL; C1 but NEL; U+FFFE, U+FFFF; lone surrogates.
const REFUSED = [
  0x00, 0x01, 0x07, 0x08, 0x0b, 0x0c, 0x1b, 0x1f, 0x7f, 0x80, 0x84, 0x86, 0x9f, 0xfffe, 0xffff, 0xd800,
  0xdbff, 0xdc00, 0xdfff,
]
const hex = (c: number) => c.toString(16).toUpperCase().padStart(4, "0")

describe("a character outside YAML's printable set", () => {
  it.each(REFUSED.map((c) => [hex(c), c]))("U+%s is refused at its line and column", (_, c) => {
    const e = refusal(T(`pay${String.fromCharCode(c)}er`))
    expect([e.line, e.column]).toEqual([2, 16])
    expect(e.detail).toBe(`character U+${hex(c)}, which PyYAML (the original's reader) refuses: remove it`)
    expect(e.message).toContain(`mycelium.yaml:2:16: character U+${hex(c)}`)
  })

  it("is refused inside double and single quotes, in a comment, in a key and in an unread section alike", () => {
    const places = [
      [`${T('"a\x07b"')}`, 2, 15],
      [`${T("'a\x07b'")}`, 2, 15],
      [`# note \x1b[31m\n${T("a")}`, 1, 8],
      [`${T("a")}  # \x7f\n`, 4, 5],
      [`${T("a")}tools:\n  pay\x80: {side_effect_class: read}\n`, 5, 6],
      [`${T("a")}\x00`, 4, 1],
      [`${T("a")}block: |\n  x\x9fy\n`, 5, 4],
    ] as const
    for (const [yaml, line, column] of places) {
      const e = refusal(yaml)
      expect([e.line, e.column]).toEqual([line, column])
      expect(e.detail).toMatch(/^character U\+00(07|1B|7F|80|00|9F), which PyYAML/)
    }
  })

  it("is refused before anything else is read: an unknown key, a syntax error or a duplicate before it", () => {
    for (const head of [
      "tools:\n  x:\n    side_efect_class: read\n",
      "a: [1,\n",
      "a: 1\na: 2\n",
      "x: !!int q\n",
    ]) {
      const lines = head.split("\n").length
      expect(refusal(`${head}# \x07\n`)).toMatchObject({ line: lines, column: 3, path: [] })
    }
  })

  it("the first one is named, counting lines over CRLF and a lone CR, past a BOM", () => {
    const e = refusal(`\ufeff# a\r\n# b\rx: \x1b\x07\n`)
    expect([e.line, e.column, e.detail.slice(0, 16)]).toEqual([3, 4, "character U+001B"])
  })
})

describe("what PyYAML reads stays readable", () => {
  it("escapes in double quotes are no raw character: \\x07, \\e, \\u001b, \\x7f load as those characters", () => {
    expect(agent('"a\\x07\\e\\u001b\\x7fb"')).toBe("a\x07\x1b\x1b\x7fb")
  })

  it("a BOM at the start, CRLF, a lone CR and TAB load as before", () => {
    expect(agent('"a"\r\n')).toBe("a")
    expect(
      loadConfigFromString(`\ufeff${T("a")}`.replace(/\n/g, "\r\n"), quiet).transition?.policyVersion,
    ).toBe("v1")
    expect(loadConfigFromString(T("a").replace(/\n/g, "\r"), quiet).transition?.agentId).toBe("a")
    // PyYAML takes a TAB in quotes and comments (not before a comment or as indentation).
    expect(loadConfigFromString(`${T('"a\tb"')}# a\ttab\n`, quiet).transition?.agentId).toBe("a\tb")
  })

  it("NBSP, private use, U+FFFD, a BOM inside a value and a surrogate pair are printable", () => {
    expect(agent("a\u00a0\ue000\ufffd\u{1f600}")).toBe("a\u00a0\ue000\ufffd\u{1f600}")
    expect(agent('"a\ufeffb"')).toBe("a\ufeffb")
  })

  it("NEL is printable to PyYAML: it is refused as the line break only PyYAML sees, never as a character", () => {
    const e = refusal(T("a\x85b"))
    expect([e.line, e.column]).toEqual([2, 14])
    expect(e.detail).toBe(
      "character U+0085, a line break only PyYAML (the original's reader) sees: use a newline",
    )
  })

  it("a good config loads unchanged", () => {
    const config = loadConfigFromString(
      `${T("payment-agent")}action_ledger:\n  storage: memory\n  tools: [send_payment]\n` +
        `tools:\n  send_payment: {side_effect_class: keyed_mutate}  # a comment\n`,
      quiet,
    )
    expect(config.transition).toMatchObject({ agentId: "payment-agent", policyVersion: "v1" })
    expect([...config.tools.keys()]).toEqual(["send_payment"])
    expect(config.tools.get("send_payment")?.binding?.sideEffectClass).toBe("keyed_mutate")
  })
})
