// A config error for a store without a factory names the entry to load the file with: that entry must really
// export loadConfig. Node only: it reads package.json and imports the Node entry it names.
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { ConfigError, loadConfigFromString } from "../../src/core/config/index.ts"

describe("a store without a factory", () => {
  // Each message tells the reader which entry to load the file with; that entry must really export loadConfig.
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    exports: Record<string, { default: string }>
  }
  async function entryNamedIn(message: string): Promise<Record<string, unknown>> {
    const entry = /'mycelium-runtime(\/[\w/-]+)?'/.exec(message)?.[1] ?? ""
    const target = pkg.exports[`.${entry}`]?.default
    expect(target, `package.json has no export '.${entry}'`).toBeDefined()
    const src = (target as string).replace(/^\.\/dist\//, "../../src/").replace(/\.js$/, ".ts")
    return (await import(src)) as Record<string, unknown>
  }
  const failure = async (
    yaml: string,
    use: (c: ReturnType<typeof loadConfigFromString>) => Promise<unknown> | null,
  ) => {
    const error = await Promise.resolve(use(loadConfigFromString(yaml, { env: {} }))).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(ConfigError)
    return (error as ConfigError).message
  }

  it("names an entry that exports loadConfig, for every kind of store", async () => {
    const messages = [
      await failure("action_ledger: {storage: file, path: l.json}\ntools:\n  t: {ledger: true}\n", (c) =>
        c.ledgerFor("t"),
      ),
      await failure("task_ledger: {storage: file, path: t.json}\ntasks:\n  p: {ledger: true}\n", (c) =>
        c.taskLedgerFor("p"),
      ),
      await failure("state_flush: {storage: file, path: s.json}\n", (c) => c.stateFlush()),
    ]
    for (const message of messages) {
      expect(message).toContain("needs a")
      expect(typeof (await entryNamedIn(message)).loadConfig, message).toBe("function")
    }
  })
})
