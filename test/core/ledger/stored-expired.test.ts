// A row whose stored terminal_outcome is EXPIRED itself: the original's legacy rows, and what its field repair (and
// ours) writes for an in-flight row with a lapsed lease and no valid outcome (reference §1.6, §1.1). The gates read
// it as EXPIRED; every write that settles it must accept the stored EXPIRED, or the redispatch re-read the same row
// without end (without a single timer: the process hung) and no operator could release it. The scenarios:
// stored-expired.ts; the server stores run them too (test/adapters/stored-expired-stores.test.ts).
import { describe } from "vitest"
import { MemoryLedgerStorage } from "../../../src/core/index.ts"
import { expiredRowScenarios } from "./stored-expired.ts"

describe("a row stored as EXPIRED", () => {
  expiredRowScenarios(async () => new MemoryLedgerStorage())
})
