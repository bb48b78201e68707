// biome-ignore-all lint/suspicious/noTemplateCurlyInString: YAML text that references ${VAR}
// A `${VAR:-default}`'s default is text: a `$NAME` in it loaded as those letters (`redis://$HOST/0` was the address),
// and its `$$` stayed two dollars where everywhere else in the value it is one.
import { describe, expect, it } from "vitest"
import { ConfigError, loadConfigFromString, type ResolvedStorage } from "../../../src/core/config/index.ts"

const ENV = { HOST: "cache.internal", SET: "redis://set/0" }
const yaml = (url: string): string => `action_ledger:\n  storage: redis\n  tools: [t]\n  url: '${url}'\n`
const storageOf = (url: string): ResolvedStorage | undefined =>
  loadConfigFromString(yaml(url), { onWarning: () => {}, env: ENV }).tools.get("t")?.ledger?.storage

function refusal(url: string): ConfigError {
  try {
    storageOf(url)
  } catch (e) {
    if (e instanceof ConfigError) return e
    throw e
  }
  throw new Error(`loaded ${url}`)
}

describe("${VAR:-default}", () => {
  it.each([
    "${NOPE:-redis://$HOST/0}",
    "redis://${NOPE:-$HOST}/0",
    "${NOPE:-redis://cache/0?p=$$$HOST}",
    // Refused whether or not the default is used: the file's meaning does not hang on the environment.
    "${SET:-redis://$HOST/0}",
    "${NOPE:-redis://${HOST}/0}",
  ])("a variable in the default (%s) is a ConfigError at the url's line, column and key", (url) => {
    const e = refusal(url)
    expect(e.code).toBe("config_invalid")
    expect(e.path).toEqual(["action_ledger", "url"])
    expect([e.line, e.column]).toEqual([4, 8])
    expect(e.message).toContain("mycelium.yaml:4:8 at 'action_ledger.url'")
    expect(e.message).toContain("a default holds no variable")
    // Not named: the rest of the default may be a password.
    expect(e.message).not.toContain("HOST")
  })

  it("$$ in a default is one '$', as everywhere else in the value; a '$' before no name is text", () => {
    expect(storageOf("${NOPE:-redis://h/0?password=a$$b}")).toMatchObject({ url: "redis://h/0?password=a$b" })
    expect(storageOf("redis://h/${NOPE:-0$$$$}")).toMatchObject({ url: "redis://h/0$$" })
    expect(storageOf("redis://h/${NOPE:-0$1$}")).toMatchObject({ url: "redis://h/0$1$" })
    expect(storageOf("${SET:-redis://h/a$$b}")).toMatchObject({ url: "redis://set/0" })
  })
})
