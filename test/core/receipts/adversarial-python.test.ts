// Hostile values against the Python original's canonical text: for each stored line, the text Python's
// json.dumps(json.loads(line)) signs must be the text this port signs, or a genuine receipt fails here (or a
// receipt signed here fails there). python3 computes the expected text; a missing python3 fails the test.
import { execFileSync } from "node:child_process"
import { describe, expect, it } from "vitest"
import { parseReceiptJson, receiptPayloadText } from "../../../src/core/receipts/index.ts"

const PY = `
import json, sys
FIELDS = ("receipt_id", "agent_id", "action", "action_kind", "request_id", "inputs", "outputs", "status", "timestamp", "error")
for line in sys.stdin:
    r = json.loads(line)
    print(json.dumps({k: r[k] for k in FIELDS}, sort_keys=True, separators=(",", ":"), default=str))
`

const values = [
  "100",
  "100.0",
  "1e-05",
  "0.00001",
  "1152921504606846976",
  "1152921504606846976.0",
  "-0.0",
  "-0",
  "NaN",
  "Infinity",
  "-Infinity",
  "1e400",
  "1e16",
  "1e22",
  "123456789012345678901234567890",
  "5e-324",
  "1.7976931348623157e308",
  "0.1",
  "0e0",
  "-0e0",
  "-0.0e0",
  "1.0E+2",
  "1E400",
  "-1E400",
  "2.5E-3",
  // Fractions JSON.parse rounds to a whole number, with no run of 16 digits: floats to json.loads.
  "100000.000000000001",
  "123456789.0000000001",
  "0.99999999999999999",
  // Runs of 16 digits or more JSON.parse reads as json.loads does (they take the fast path), and those it does not.
  "1764957600.1234567",
  "0.30000000000000004",
  "-1234567.890123456789",
  "1234567890123456",
  "9007199254740991",
  "9007199254740992",
  "-9007199254740993",
  "12345678901234567.5",
  '"id 98765432109876543210 in a string"',
  "[-0, 0, -0.0, 0.0]",
  "[1.5, 2.0, -3, 4e-7]",
  '"\\ud800 lone high, \\udfff lone low, \\u0000 NUL, \\u2028, \\u007f, \\ud83d\\ude00"',
  '{"\\uffff": 1, "\\ud800\\udc00": 2, "a": 3, "\\u00e9": 4, "B": 5, "__proto__": 6}',
  '{"nested": {"z": [true, false, null], "y": {"__proto__": {"x": -0.0}}}}',
]

describe("canonical text against Python's json.dumps", () => {
  it("every hostile number, string and key order signs the same text in both languages", () => {
    const lines = values.map(
      (v, i) =>
        `{"receipt_id": "rcpt-${i}", "agent_id": "a", "action": "x", "action_kind": "tool", "request_id": "r", ` +
        `"inputs": {"args": [${v}], "kwargs": {"k": ${v}}}, "outputs": ${v}, "status": "completed", ` +
        `"timestamp": 1767225600.25, "signature": "", "error": null}`,
    )
    const python = execFileSync("python3", ["-c", PY], { input: `${lines.join("\n")}\n` })
      .toString()
      .trim()
      .split("\n")
    const here = lines.map((l) => receiptPayloadText(parseReceiptJson(l) as never))
    // The forms whose text differs, then the texts themselves.
    expect(values.filter((_, i) => here[i] !== python[i])).toEqual([])
    expect(here).toEqual(python)
  })
})
