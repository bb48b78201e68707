// `registry: {allowed: []}` is an explicit allowlist of no tool: the original (without `auto: true`) builds an empty
// ToolRegistry, which refuses every tool. It allowed every configured tool here, as if `allowed` were missing.
import { describe, expect, it } from "vitest"
import { loadConfigFromString } from "../../../src/core/config/index.ts"

const quiet = { onWarning: () => {}, env: {} }
const tools = "tools:\n  send_payment: {}\n  delete_account: {}\n"
const allowed = (registry: string): readonly string[] =>
  [...loadConfigFromString(`${tools}${registry}`, quiet).registry().allowedTools].sort()

describe("registry.allowed", () => {
  it("an empty list allows no tool", () => {
    const registry = loadConfigFromString(`${tools}registry:\n  allowed: []\n`, quiet).registry()
    expect(registry.allowedTools).toEqual([])
    expect(() => registry.validateCall("delete_account")).toThrow(/not_in_allowlist/)
    expect(allowed("registry: {allowed: [], auto: false}\n")).toEqual([])
  })

  it("an empty list with auto: true allows every configured tool", () => {
    expect(allowed("registry: {allowed: [], auto: true}\n")).toEqual(["delete_account", "send_payment"])
  })

  it("no allowed, or no section, allows every configured tool unless auto: false", () => {
    expect(allowed("")).toEqual(["delete_account", "send_payment"])
    expect(allowed("registry: {}\n")).toEqual(["delete_account", "send_payment"])
    expect(allowed("registry: {auto: true}\n")).toEqual(["delete_account", "send_payment"])
    expect(allowed("registry: {auto: false}\n")).toEqual([])
    expect(allowed("registry: {allowed: [send_payment]}\n")).toEqual(["send_payment"])
  })
})
