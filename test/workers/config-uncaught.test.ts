// mycelium.yaml's wrapping in workerd (see uncaught.ts): the body of a tool the ledger does not hold, and of a task
// the task ledger does not hold, that throws before its first await (an input check, the usual first line) was handed
// back from the wrapper's async function already rejected: one report per refused call.
import { describe, expect, it } from "vitest"
import { loadConfigFromString } from "../../src/core/config/index.ts"
import { uncaught } from "./uncaught.ts"

const YAML = `
transition:
  agent_id: support-agent
  policy_version: "2026.07.1"

tools:
  fetch_customer:
    side_effect_class: read
    bounded:
      schema:
        customer_id: {type: string, required: true, pattern: "^c\\\\d+$"}

tasks:
  export_report: {}
`

describe("config rejections in workerd are handled, never reported uncaught", () => {
  it("an unledgered tool whose body throws before its first await, with and without bounds", async () => {
    const config = loadConfigFromString(YAML, { onWarning: () => {} })
    let runs = 0
    const body = async (args: { customer_id: string }) => {
      runs++
      if (args.customer_id === "c0") throw new RangeError("customer c0 is archived")
      return { id: args.customer_id }
    }
    for (const name of ["fetch_customer", "lookup_customer"]) {
      const fetchCustomer = config.apply(name, body)
      const seen = await uncaught(async () => {
        await expect(fetchCustomer({ customer_id: "c0" })).rejects.toThrow("customer c0 is archived")
        // The bounds' own refusal, before the body.
        if (name === "fetch_customer") await expect(fetchCustomer({ customer_id: "x1" })).rejects.toThrow()
      })
      expect(seen).toEqual([])
      expect(await fetchCustomer({ customer_id: "c7" })).toEqual({ id: "c7" })
    }
    expect(runs).toBe(4)
  })

  it("an unledgered task whose body throws before its first await", async () => {
    const config = loadConfigFromString(YAML, { onWarning: () => {} })
    let runs = 0
    const exportReport = config.applyTask("export_report", async (args: { month: string }) => {
      runs++
      if (!/^\d{4}-\d{2}$/.test(args.month)) throw new RangeError(`not a month: ${args.month}`)
      return `report ${args.month}`
    })
    const seen = await uncaught(async () => {
      await expect(exportReport({ month: "May" })).rejects.toThrow("not a month: May")
    })
    expect(seen).toEqual([])
    expect(runs).toBe(1)
  })
})
