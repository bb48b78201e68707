// Text no store can hold, sent by a hostile caller: invalid UTF-8, NUL, unpaired surrogates, in bodies, ids and
// queries. Over real Postgres these were 503 "storage unavailable" (a fake outage a caller could raise at will);
// they are a 400 on every store, and invalid bytes no longer collapse two ids into one.
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import { DATABASE_URL, dropLedgerTable, runTag, SERVICES_HINT } from "../adapters/servers/env.ts"

const JSON_HEADERS = { "content-type": "application/json" }
const table = runTag("adv_text").replace(/-/g, "_")
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 })
const postgres = new NeonLedgerStorage({ pool, table })

beforeAll(async () => {
  try {
    await postgres.migrate()
  } catch (e) {
    throw new Error(`Postgres at ${DATABASE_URL} is not answering (${String(e)}); ${SERVICES_HINT}`)
  }
})
afterAll(async () => {
  await dropLedgerTable(pool, table)
  await pool.end()
})

const bytes = (...parts: (string | number[])[]) =>
  new Uint8Array(parts.flatMap((p) => (typeof p === "string" ? [...new TextEncoder().encode(p)] : p)))

describe("text no store can hold", () => {
  for (const [label, storage] of [
    ["postgres", postgres],
    ["memory", new MemoryLedgerStorage()],
  ] as const) {
    it(`${label}: NUL and unpaired surrogates in bodies, ids and queries are 400, never 503`, async () => {
      const app = createLedgerApp({ storage })
      const bodies = [
        '{"tool":"t","meta":{"request_id":"n\\u0000x"}}',
        '{"tool":"t","meta":{"request_id":"s\\ud800"}}',
        '{"tool":"t\\u0000","meta":{"request_id":"ok-id"}}',
        '{"tool":"t","args":{"a":"\\udc00"},"meta":{"request_id":"ok-id"}}',
        '{"tool":"t","args":{"k\\u0000":1},"meta":{"request_id":"ok-id"}}',
      ]
      for (const body of bodies) {
        const r = await app.request("/v1/calls", { method: "POST", headers: JSON_HEADERS, body })
        const json = (await r.json()) as { error?: { code: string } }
        expect([body, r.status, json.error?.code]).toEqual([body, 400, "invalid_body"])
      }
      for (const path of ["/v1/transitions/n%00x", "/v1/rows/a%00", "/v1/transitions?cursor=%00"]) {
        const r = await app.request(path)
        expect([path, r.status]).toEqual([path, 400])
      }
      // Nothing was written, and a clean call still runs.
      const ok = await app.request("/v1/calls", {
        method: "POST",
        headers: JSON_HEADERS,
        body: '{"tool":"t","meta":{"request_id":"ok-id"}}',
      })
      expect(((await ok.json()) as { status: string }).status).toBe("run")
      const list = (await (await app.request("/v1/transitions")).json()) as {
        transitions: { request_id: string }[]
      }
      expect(list.transitions.map((t) => t.request_id)).toEqual(["ok-id"])
    })
  }

  it("invalid UTF-8 is 400 invalid_json: two different byte strings never name the same row", async () => {
    const storage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage })
    for (const bad of [
      [0xff, 0xfe],
      [0xc3, 0x28],
      [0xed, 0xa0, 0x80],
    ]) {
      const r = await app.request("/v1/calls", {
        method: "POST",
        headers: JSON_HEADERS,
        body: bytes('{"tool":"t","meta":{"request_id":"u', bad, '"}}'),
      })
      const json = (await r.json()) as { error?: { code: string } }
      expect([bad, r.status, json.error?.code]).toEqual([bad, 400, "invalid_json"])
    }
    expect(storage.size).toBe(0)
  })
})
