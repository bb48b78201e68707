// history_guard.detect_drops: prepareMessages() inside a run checks drops by default; the Python original never
// does (it builds a new HistoryGuard per prepare_messages call), and `detect_drops: false` gives its behaviour.
import { describe, expect, it } from "vitest"
import "../../../src/async-context.ts"
import { ConfigError, loadConfigFromString } from "../../../src/core/config/index.ts"
import { HistoryDropError } from "../../../src/core/transcript/index.ts"

const say = (role: string, content: string) => ({ role, content })
const first = [
  say("user", "first question"),
  say("assistant", "first answer"),
  say("user", "second question"),
]
// The app summarises its own history: the first exchange is gone.
const trimmed = [first[2], say("assistant", "second answer")]

const trimInRun = (yaml: string) => {
  const config = loadConfigFromString(yaml, { onWarning: () => {} })
  return config.run("r1", async () => {
    config.prepareMessages(first)
    config.prepareMessages(trimmed)
  })
}

describe("history_guard.detect_drops", () => {
  it("by default a history the app trimmed inside a run raises HistoryDropError", async () => {
    await expect(trimInRun("history_guard:\n  max_tokens: 10000\n")).rejects.toBeInstanceOf(HistoryDropError)
    await expect(
      trimInRun("history_guard:\n  max_tokens: 10000\n  detect_drops: true\n"),
    ).rejects.toBeInstanceOf(HistoryDropError)
  })

  it("with drops checked, accept() after the app's own trim lets the next call pass", async () => {
    const config = loadConfigFromString("history_guard:\n  max_tokens: 10000\n")
    await config.run("r1", async () => {
      config.prepareMessages(first)
      config.historyGuard()?.accept(trimmed)
      expect(config.prepareMessages(trimmed)).toEqual(trimmed)
      expect(() => config.prepareMessages(trimmed.slice(1))).toThrow(HistoryDropError)
    })
  })

  it("detect_drops: false checks only the limits, as the original's prepare_messages", async () => {
    await expect(
      trimInRun("history_guard:\n  max_tokens: 10000\n  detect_drops: false\n"),
    ).resolves.toBeUndefined()
    // The limits still apply.
    const config = loadConfigFromString("history_guard:\n  max_messages: 1\n  detect_drops: false\n")
    await expect(config.run("r2", async () => config.prepareMessages(first))).rejects.toThrow(/max_messages/)
  })

  it("a non-boolean detect_drops is a ConfigError at its key", () => {
    let error: unknown
    try {
      loadConfigFromString("history_guard:\n  max_tokens: 10000\n  detect_drops: sometimes\n")
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(ConfigError)
    const e = error as ConfigError
    expect(e.path).toEqual(["history_guard", "detect_drops"])
    expect([e.line, e.column]).toEqual([3, 17])
    expect(e.message).toMatch(/^mycelium\.yaml:3:17 at 'history_guard\.detect_drops': /)
  })
})
