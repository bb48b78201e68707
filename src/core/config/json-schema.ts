import * as z from "zod/mini"
import { configSchema } from "./schema.ts"

type Json = Record<string, unknown>

// What an editor reads is YAML 1.2 (`agent_id: 123` a number, `.inf` a number), where the loader reads PyYAML's way.
const IDENTITY: Json = {
  anyOf: [{ type: "string", minLength: 1 }, { type: "number" }, { type: "boolean" }],
  // PyYAML's 0, 0.0 and False: the original refuses them as no value.
  not: { enum: [0, false] },
}

/** Every number without an upper bound gets the largest finite one: the loader refuses `.inf` there. */
function finite(node: unknown): void {
  if (Array.isArray(node)) node.forEach(finite)
  else if (node && typeof node === "object") {
    const o = node as Json
    if (o.type === "number" && o.maximum === undefined && o.exclusiveMaximum === undefined)
      o.maximum = Number.MAX_VALUE
    Object.values(o).forEach(finite)
  }
}

/** The JSON Schema of mycelium.yaml (draft 2020-12), for editors: `# yaml-language-server: $schema=...`. */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(configSchema, { io: "input", target: "draft-2020-12" }) as Json
  finite(schema)
  const transition = (schema.properties as Record<string, Json>).transition as { properties: Json }
  transition.properties.agent_id = { ...IDENTITY }
  transition.properties.policy_version = { ...IDENTITY }
  // Seconds, or null (or .inf, a number to YAML) for no limit; zod's Infinity literal has no JSON form.
  transition.properties.poll_timeout = {
    anyOf: [{ type: "number", exclusiveMinimum: 0 }, { type: "null" }],
  }
  return {
    ...schema,
    $id: "https://unpkg.com/mycelium-runtime/schemas/mycelium.schema.json",
    title: "mycelium.yaml",
    description: "Configuration of mycelium-runtime's guards. Unknown keys are errors.",
  }
}
