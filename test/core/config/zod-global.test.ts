// Importing the config modules leaves zod's global configuration alone: a module-level z.config(en()) would give
// every zod/mini schema of the application English messages it never asked for. Node project only: vitest runs each
// file in its own module graph, so zod/mini's bare default is what this file sees first. (bun runs every file in one
// process, where another file's classic zod import has already set the English messages; messages.test.ts checks the
// load-time half there.)
import { expect, it } from "vitest"
import * as z from "zod/mini"
import { loadConfigFromString } from "../../../src/core/config/index.ts"

it("importing and using the config loader keeps zod/mini's own default message", () => {
  const mine = z.string().check(z.maxLength(2))
  expect(mine.safeParse("long").error?.issues[0]?.message).toBe("Invalid input")
  loadConfigFromString("transition:\n  agent_id: a\n  policy_version: v1\n", { env: {} })
  expect(mine.safeParse("long").error?.issues[0]?.message).toBe("Invalid input")
})
