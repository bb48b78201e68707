import { describe, expect, it } from "vitest"
import { TEMPLATES } from "../../../src/cli/templates.ts"
import { loadConfigFromString } from "../../../src/core/config/index.ts"

describe("mycelium init templates", () => {
  it.each(Object.entries(TEMPLATES))("%s loads as written", (_name, text) => {
    const config = loadConfigFromString(text, {
      env: { MYCELIUM_SIGNING_KEY: "k" },
      storageFactory: () => Promise.reject(new Error("not built in this test")),
    })
    expect(config.transition?.agentId).toBe("my-agent")
  })

  it("quickstart ledgers subagent_task on a file as non_idempotent_mutate", () => {
    const config = loadConfigFromString(TEMPLATES.quickstart, {
      storageFactory: () => Promise.reject(new Error()),
    })
    const tool = config.tools.get("subagent_task")
    expect(tool?.ledger?.storage).toEqual({ kind: "file", path: "./.mycelium/ledger.json" })
    expect(tool?.binding?.sideEffectClass).toBe("non_idempotent_mutate")
  })

  it("minimal wires the guards it names", () => {
    const config = loadConfigFromString(TEMPLATES.minimal, {
      env: { MYCELIUM_SIGNING_KEY: "k" },
      storageFactory: () => Promise.reject(new Error()),
    })
    expect(config.tools.get("delete_file")?.bounded?.allowed_paths).toEqual(["/workspace/src/"])
    expect(config.tools.get("fetch_customer")?.protect).toEqual({ entityParam: "customer_id", ttl: 60 })
    expect(config.resolved.tasks.get("process_invoice")?.idFrom).toEqual(["invoice_id"])
    expect(config.resolved.signingKey).toBe("k")
  })

  it("the full template's development defaults are refused, with the key named, once production is switched on", () => {
    const prod = TEMPLATES.full.replace("# profile: production", "profile: production")
    expect(() => loadConfigFromString(prod, { storageFactory: () => Promise.reject(new Error()) })).toThrow(
      /profile is 'production' but '(memory_storage_policy|request_identity_policy)'/,
    )
  })
})
