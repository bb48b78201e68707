// Every error the package throws at its users extends MyceliumError with a snake_case code. A plain Error thrown
// from src/ is only allowed where something else catches and wraps it before a user sees it; each such place is
// listed here with the reason, so a new plain throw fails this test until it gets a class (or a reason).
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"

const WRAPPED: Record<string, string> = {
  // SafeStorage turns a backend's failure into LedgerStorageUnavailableError; these stand for SQLite's refusals.
  "src/core/storage/memory.ts": "simulated backend refusal, wrapped by SafeStorage",
  "src/adapters/durable-object.ts": "SQLite refusal relayed from the object, wrapped by SafeStorage",
  // Caught three lines below and rethrown as LedgerStorageUnavailableError.
  "src/edge/client.ts": "oversized answer, rethrown as LedgerStorageUnavailableError",
  // A token function that hangs or answers no token: thrown inside the clients' request try, which types it
  // (LedgerStorageUnavailableError, LedgerHttpError `unreachable`) as any failed request.
  "src/core/storage/request-timeout.ts": "a token function's failure, typed by the HTTP clients' request",
  // The exact JSON reader fails as JSON.parse does (SyntaxError): parseToolArguments wraps it as
  // ToolArgumentsError; parseReceiptJson documents it, as JSON.parse's stand-in.
  "src/core/exact-json.ts": "JSON.parse's SyntaxError, on purpose",
  // A member named twice reads as JSON that does not parse: every store reads what it holds through
  // readStoredReceipt, which types it as ReceiptStoreCorruptError (the file store's link lines included).
  "src/core/receipts/record.ts": "parseReceiptJson's SyntaxError, as JSON.parse's",
  "src/adapters/file-receipts.ts":
    "a link line's SyntaxError, caught by readStoredReceipt as ReceiptStoreCorruptError",
  // The demo's simulated gateway crash: the tour shows the ledger's reaction to it.
  "src/cli/demo-scenario.ts": "the demo's simulated crash",
  // A result a strict task store cannot keep: caught by the next line's catch, rethrown as TaskResultUnstorableError.
  "src/core/tasks/task-ledger.ts": "a result the store cannot keep, rethrown as TaskResultUnstorableError",
  // Caught by the tool wrapper and returned to the model as an error observation.
  "src/harness/workspace/tools.ts": "a model's bad argument, returned as an observation",
  // The conformance suites are test code: a body that throws on purpose (the suite asserts the stored
  // "RangeError: ..." or "Error: ..." text), or a case failing in the test runner.
  "src/conformance/receipt-store.ts": "a walk that never ends fails the case",
  "src/conformance/state-flush.ts": "a run body's deliberate failure, stored as its text",
  "src/conformance/task-store.ts": "a task body's deliberate failure, stored as its text",
  "src/conformance/ledger-model.ts": "a store that departs from the contract's model fails the case",
  "src/conformance/task-model.ts": "a task store that departs from the swap contract fails the case",
}

const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? files(join(dir, d.name)) : d.name.endsWith(".ts") ? [join(dir, d.name)] : [],
  )

describe("one error root", () => {
  it("src/ throws plain Error, TypeError or RangeError only where the listed wrapper catches it", () => {
    const plain = /throw new (?:Error|TypeError|RangeError|SyntaxError)\(/
    const found = files("src")
      .filter((f) => plain.test(readFileSync(f, "utf8")))
      .sort()
    expect(found).toEqual(Object.keys(WRAPPED).sort())
  })
})
