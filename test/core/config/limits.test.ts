// What bounds the work of loading a config: its size (1 MiB) and the values its aliases expand to (a million),
// each a ConfigError before the work is done; plain reuse of an anchor loads however often, as in PyYAML.
import { describe, expect, it } from "vitest"
import { ConfigError, loadConfigFromString } from "../../../src/core/config/index.ts"

const T = "transition:\n  agent_id: a\n  policy_version: v1\n"

const refused = (yaml: string): ConfigError => {
  try {
    loadConfigFromString(yaml, { env: {} })
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError)
    return e as ConfigError
  }
  throw new Error("loaded")
}

describe("aliases", () => {
  it("one anchor reused by 60 tools loads (the yaml library's count refused 51 as an attack)", () => {
    let yaml = "tools:\n  t0:\n    protect: &p {entity_param: id, ttl: 5}\n"
    for (let i = 1; i < 60; i++) yaml += `  t${i}:\n    protect: *p\n`
    expect(loadConfigFromString(yaml, { env: {} }).tools.size).toBe(60)
  })

  it("count the values of their anchor: 101 aliases of a 10,000-item list are refused at the 100th", () => {
    const list = Array(10_000).fill("/x").join(",")
    let yaml = `tools:\n  t0:\n    bounded:\n      allowed_paths: &p [${list}]\n`
    for (let i = 1; i <= 101; i++) yaml += `  t${i}: {bounded: {allowed_paths: *p}}\n`
    const e = refused(yaml)
    expect(e.path).toEqual(["tools", "t99", "bounded", "allowed_paths"])
    expect([e.line, e.column]).toEqual([103, 34])
    expect(e.message).toContain("over a million values")
  })

  it("a billion laughs is refused in well under a second", () => {
    const L = "abcdefghij"
    let yaml = "tools:\n  t:\n    bounded:\n      allowed_paths:\n        - &a [x,x,x,x,x,x,x,x,x,x]\n"
    for (let i = 1; i < 10; i++) yaml += `        - &${L[i]} [${Array(10).fill(`*${L[i - 1]}`)}]\n`
    const start = performance.now()
    expect(refused(yaml).line).toBe(10)
    // Expanded, it is ten billion values: minutes, not seconds. The bound is wide so a loaded machine cannot fail it.
    expect(performance.now() - start).toBeLessThan(5_000)
  })
})

describe("size", () => {
  it("a config over 1 MiB is refused before it is parsed, in characters or in UTF-8 bytes", () => {
    // 65,000 keys parse in about 25 s on the CI machine, so a refusal within 5 s can only come before the parse.
    const keys = `extra:\n${Array.from({ length: 65_000 }, (_, i) => `  k${i}: v${i}`).join("\n")}\n`
    for (const pad of [keys, `# ${"x".repeat(2 ** 20)}\n`, `# ${"\u00e9".repeat(600_000)}\n`]) {
      const start = performance.now()
      const e = refused(`${T}${pad}`)
      expect(performance.now() - start).toBeLessThan(5_000)
      expect([e.path, e.line]).toEqual([[], undefined])
      expect(e.message).toContain("over 1 MiB")
    }
  })
})
