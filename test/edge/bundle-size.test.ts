// The worker as `wrangler deploy` would upload it: minified, no Node compatibility layer, at most 80 KB gzipped.
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { gzipSync } from "node:zlib"
import { describe, expect, it } from "vitest"

describe("worker bundle", () => {
  it("wrangler deploy --dry-run: ≤ 80 KB gzipped, no nodejs_compat, zod without its locales", () => {
    const out = mkdtempSync(join(tmpdir(), "mycelium-dry-"))
    try {
      execFileSync("node_modules/.bin/wrangler", ["deploy", "--dry-run", "--outdir", out], {
        stdio: "pipe",
        env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
        timeout: 120_000,
      })
      const js = readFileSync(join(out, "worker.js"))
      const gz = gzipSync(js, { level: 9 }).length
      console.log(
        `worker bundle: ${(js.length / 1024).toFixed(1)} KB minified, ${(gz / 1024).toFixed(1)} KB gzipped`,
      )
      expect(gz).toBeLessThanOrEqual(80 * 1024)
      const text = js.toString("utf8")
      // zod's locale tables (e.g. the German error messages) must not ride along.
      expect(text).not.toMatch(/Ungültige Eingabe/)
      expect(text).not.toMatch(/from\s*"node:/)
    } finally {
      rmSync(out, { recursive: true, force: true })
    }
    expect(readFileSync("wrangler.toml", "utf8")).not.toMatch(/^compatibility_flags\s*=.*nodejs_compat/m)
  }, 150_000)
})
