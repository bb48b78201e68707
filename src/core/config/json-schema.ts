import * as z from "zod/mini"
import { configSchema } from "./schema.ts"

/** The JSON Schema of mycelium.yaml (draft 2020-12), for editors: `# yaml-language-server: $schema=...`. */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(configSchema, { io: "input", target: "draft-2020-12" }) as Record<
    string,
    unknown
  >
  return {
    ...schema,
    $id: "https://unpkg.com/mycelium-runtime/schemas/mycelium.schema.json",
    title: "mycelium.yaml",
    description: "Configuration of mycelium-runtime's guards. Unknown keys are errors.",
  }
}
