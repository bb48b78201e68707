import { beforeAll } from "vitest"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { testLedgerStorage } from "../conformance/ledger-storage.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"

const prefix = `mycelium-test:${runTag("conf")}:action:`

beforeAll(requireUpstash)

testLedgerStorage("upstash (real Redis via the REST server)", () => ({
  storage: new UpstashLedgerStorage({ redis: upstashClient(), prefix }),
  peer: new UpstashLedgerStorage({ redis: upstashClient(), prefix }),
}))
