// The edge app validates with zod/mini and its own English messages: it must not change the zod configuration of
// the application that mounts it (a global `z.config(...)` would, for every schema the application has).
import { describe, expect, it } from "vitest"
import * as z from "zod/mini"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

describe("zod configuration", () => {
  it("answers 400s in English and leaves the application's zod messages as they were", async () => {
    const mine = z.string().check(z.maxLength(2))
    // zod/mini's own default, which a global z.config(en()) anywhere in the edge modules would have replaced.
    const before = mine.safeParse("long").error?.issues[0]?.message
    expect(before).toBe("Invalid input")
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    const r = await app.request("/v1/calls", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tool: "x".repeat(300) }),
    })
    expect(r.status).toBe(400)
    expect(await r.json()).toEqual({
      error: { code: "invalid_body", message: "tool: Too big: expected string to have <=200 characters" },
    })
    expect(mine.safeParse("long").error?.issues[0]?.message).toBe(before)
  })
})
