// A client's error quotes the URL it refused: the whole password must be hidden, as a URL parser splits it.
import { describe, expect, it } from "vitest"
import { redact, redactText } from "../../src/cli/ledger-access.ts"

describe("redactText", () => {
  it.each([
    ["redis://default:S3CR@TPW@x.upstash.io:6379", "redis://default:***@x.upstash.io:6379"],
    ['Received: "redis://u:a@b@c@h:1/0". ', 'Received: "redis://u:***@h:1/0". '],
    ["postgres://u:pa/ss@h/db failed", "postgres://u:***@h/db failed"],
    ["redis://u:p@h/x@y and mail@example.com", "redis://u:***@h/x@y and mail@example.com"],
  ])("hides every part of the password in %s", (text, shown) => {
    expect(redactText(text)).toBe(shown)
  })

  it("agrees with redact on a URL whose password holds '@'", () => {
    const url = "redis://default:S3CR@TPW@x.upstash.io:6379"
    expect(redact(url)).not.toContain("TPW")
    expect(redactText(`invalid URL: ${url}`)).toBe("invalid URL: redis://default:***@x.upstash.io:6379")
  })
})
