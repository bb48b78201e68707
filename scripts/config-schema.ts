// Writes schemas/mycelium.schema.json from the zod schema (`npm run schema`); a test fails when it is stale.
import { writeFileSync } from "node:fs"
import { configJsonSchema } from "../src/core/config/json-schema.ts"

writeFileSync(
  new URL("../schemas/mycelium.schema.json", import.meta.url),
  `${JSON.stringify(configJsonSchema(), null, 2)}\n`,
)
