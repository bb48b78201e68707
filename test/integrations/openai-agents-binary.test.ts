// A tool's image or file output with its bytes as a Uint8Array (the SDK's structured tool output): the ledger stores
// JSON, where bytes become `{"0":137,...}`, and the SDK reads such an output as neither image nor file on a replay.
import { Agent, Runner, tool } from "@openai/agents"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { guardToolOptions } from "../../src/integrations/openai-agents.ts"
import { type Call, ScriptedModel, ScriptedProvider } from "./scripted/openai-agents.ts"

const binding = { agentId: "charts", policyVersion: "1", sideEffectClass: "keyed_mutate" as const }
const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 255])

/** What the model was sent for each of the turns' calls of `render`. */
async function sent(render: ReturnType<typeof tool>, turns: Call[][]) {
  const result = await new Runner({
    modelProvider: new ScriptedProvider(new ScriptedModel(turns)),
    tracingDisabled: true,
  }).run(new Agent({ name: "a", model: "scripted", tools: [render] }), "chart", { maxTurns: 4 })
  return result.newItems
    .filter((i) => i.type === "tool_call_output_item")
    .map((i) => (i.rawItem as { output: unknown }).output)
}

describe("OpenAI Agents: a structured output holding bytes", () => {
  // Over a slice of the encoder, every byte value, a length no slice divides.
  const big = new Uint8Array(3 * 1024 * 1024 + 5).map((_, i) => (i * 31 + (i >> 8)) & 255)
  for (const [kind, output] of [
    ["large image", { type: "image", image: { data: big, mediaType: "image/png" } }],
    ["image", { type: "image", image: { data: png, mediaType: "image/png" } }],
    ["file", [{ type: "file", file: { data: png, mediaType: "application/pdf", filename: "r.pdf" } }]],
  ] as const) {
    it(`a redispatched call sends the model the ${kind} the unguarded tool sends; the body ran once`, async () => {
      let runs = 0
      const options = {
        name: "render",
        description: "render a chart",
        parameters: z.object({ chart: z.string() }),
        execute: async () => {
          runs++
          return output
        },
      }
      const call: Call = { callId: "call_render", name: "render", args: { chart: "sales" } }
      const [unguarded] = await sent(tool(options), [[call]])
      runs = 0
      const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
      const guarded = await sent(tool(guardToolOptions(ledger, options, { binding })), [[call], [call]])
      expect(runs).toBe(1)
      const bytes = (output as { image?: { data: Uint8Array } }).image?.data ?? png
      expect(JSON.stringify(unguarded)).toContain(`base64,${Buffer.from(bytes).toString("base64")}`)
      expect(guarded).toEqual([unguarded, unguarded])
    })
  }
})
