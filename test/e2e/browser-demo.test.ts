// Drives examples/browser-demo in Debian's Chromium (playwright-core, no bundled browser) against Vite's dev
// server on loopback: redispatch, crash, release, and a second tab polling on the first tab's call. The counts
// are read from the page, which reads them from the IndexedDB ledger the two tabs share.
import { existsSync, mkdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { type Browser, chromium, type Page } from "playwright-core"
import { createServer, type ViteDevServer } from "vite"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const CHROMIUM = "/usr/bin/chromium"
const root = fileURLToPath(new URL("../../examples/browser-demo/", import.meta.url))
const artifacts = fileURLToPath(new URL("../../test-artifacts/", import.meta.url))
const chromiumArgs = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
]

let server: ViteDevServer | undefined
let browser: Browser | undefined
let baseUrl = ""

beforeAll(async () => {
  // Fail loudly: this test is the demo's acceptance check and must not silently pass without a browser.
  expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium`).toBe(true)
  server = await createServer({
    configFile: `${root}vite.config.ts`,
    logLevel: "silent",
    server: { host: "127.0.0.1", port: 0, strictPort: false },
  })
  await server.listen()
  baseUrl = server.resolvedUrls?.local[0] ?? ""
  expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: chromiumArgs })
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.close()
})

const decisions = (page: Page, call: string, gate: string) =>
  page.locator(`#decisions li[data-call="${call}"][data-gate="${gate}"]`)

/** Waits until `page` has logged its n-th decision of this kind. */
async function decided(page: Page, call: string, gate: string, n = 1): Promise<void> {
  await decisions(page, call, gate)
    .nth(n - 1)
    .waitFor({ timeout: 20_000 })
}

async function executions(page: Page, call: string): Promise<number> {
  return Number(await page.locator(`#exec-${call}`).textContent())
}

async function outcome(page: Page, call: string, expected: string): Promise<void> {
  await page.locator(`#rows tr[data-call="${call}"][data-outcome="${expected}"]`).waitFor({ timeout: 20_000 })
}

describe("browser demo (Chromium, IndexedDB ledger shared by two tabs)", () => {
  it("redispatch runs once, a crash hard-blocks, a release re-runs exactly once, a second tab polls", async () => {
    const context = await browser!.newContext()
    // A short lease so a closed tab's call lapses within the test; live tabs renew it every lease/3 (2 s), which
    // leaves room for a background tab's throttled timers under load.
    const page = `${baseUrl}?db=demo-e2e-${Date.now()}&lease=6`
    const a = await context.newPage()
    const errors: string[] = []
    a.on("pageerror", (e) => errors.push(e.message))
    await a.goto(page)
    await a.locator("body[data-ready=true]").waitFor({ timeout: 30_000 })

    // The scripted agent runs its two calls; redispatching the payment twice replays it.
    await a.click("#run-agent")
    await decided(a, "call_pay", "EXECUTE")
    await decided(a, "call_mail", "EXECUTE")
    await a.click("#redispatch-pay")
    await decided(a, "call_pay", "RETURN")
    await a.click("#redispatch-pay")
    await decided(a, "call_pay", "RETURN", 2)
    expect(await executions(a, "call_pay")).toBe(1)
    expect(await executions(a, "call_mail")).toBe(1)
    await outcome(a, "call_pay", "COMPLETED")

    // A crash inside sideEffect(): the row is UNKNOWN and a redispatch is hard-blocked, not run again.
    await a.click("#crash")
    await decided(a, "call_crash", "ERROR")
    await outcome(a, "call_crash", "UNKNOWN")
    await a.click("#redispatch-crash")
    await decided(a, "call_crash", "HARD_BLOCK")
    expect(await executions(a, "call_crash")).toBe(1)

    // The operator releases it: exactly one re-run, then replays.
    await a.click("#release-crash")
    await decided(a, "call_crash", "RELEASED")
    await a.click("#redispatch-crash")
    await decided(a, "call_crash", "EXECUTE")
    await a.click("#redispatch-crash")
    await decided(a, "call_crash", "RETURN")
    expect(await executions(a, "call_crash")).toBe(2)
    await outcome(a, "call_crash", "COMPLETED")

    // Tab A runs the slow call; tab B redispatches it while it is in flight and polls until A finishes.
    const b = await context.newPage()
    b.on("pageerror", (e) => errors.push(e.message))
    await b.goto(page)
    await b.locator("body[data-ready=true]").waitFor({ timeout: 30_000 })
    await a.click("#start-slow")
    await outcome(b, "call_slow", "IN_FLIGHT")
    await b.click("#redispatch-slow")
    await b.locator("#status", { hasText: "polling" }).waitFor({ timeout: 20_000 })
    await new Promise((r) => setTimeout(r, 500))
    expect(await decisions(b, "call_slow", "POLL → RETURN").count()).toBe(0)
    expect(await executions(b, "call_slow")).toBe(1)
    await a.click("#finish-slow")
    await decided(a, "call_slow", "EXECUTE")
    await decided(b, "call_slow", "POLL → RETURN")
    await outcome(b, "call_slow", "COMPLETED")
    expect(await executions(a, "call_slow")).toBe(1)
    expect(await executions(b, "call_slow")).toBe(1)

    // A real crash: tab C starts a call and is closed inside its sideEffect(). Nothing records a failure; once
    // its lease lapses, B's redispatch is hard-blocked (the effect may have happened), and after an operator
    // asserts the tab is gone and releases the call, B runs it exactly once.
    const c = await context.newPage()
    await c.goto(page)
    await c.locator("body[data-ready=true]").waitFor({ timeout: 30_000 })
    await c.click("#start-tab-crash")
    await outcome(b, "call_tab_crash", "IN_FLIGHT")
    await b
      .locator('#rows tr[data-call="call_tab_crash"] td:nth-child(4)', { hasText: "maybe_crossed" })
      .waitFor()
    await c.close()
    await b.click("#redispatch-tab-crash")
    await decided(b, "call_tab_crash", "HARD_BLOCK")
    expect(await executions(b, "call_tab_crash")).toBe(1)
    // A lapsed lease is not proof the tab is gone (it could be frozen and wake up): the release is refused
    // until an operator asserts the worker is dead.
    await b.click("#release-tab-crash")
    await b.locator("#status", { hasText: "error" }).waitFor({ timeout: 20_000 })
    expect(await decisions(b, "call_tab_crash", "RELEASED").count()).toBe(0)
    await b.click("#mark-dead-tab-crash")
    await decided(b, "call_tab_crash", "WORKER_DEAD")
    await b.click("#release-tab-crash")
    await decided(b, "call_tab_crash", "RELEASED")
    await b.click("#redispatch-tab-crash")
    await b.locator("#exec-call_tab_crash", { hasText: "2" }).waitFor({ timeout: 20_000 })
    await b.click("#finish-slow")
    await decided(b, "call_tab_crash", "EXECUTE")
    await b.click("#redispatch-tab-crash")
    await decided(b, "call_tab_crash", "RETURN")
    expect(await executions(b, "call_tab_crash")).toBe(2)

    // The page's counts match the ledger: each call's executions equal its EXECUTE decisions across both tabs.
    for (const call of ["call_pay", "call_mail", "call_crash", "call_slow", "call_tab_crash"]) {
      const executed =
        (await decisions(a, call, "EXECUTE").count()) + (await decisions(b, call, "EXECUTE").count())
      // call_crash threw inside its side effect, call_tab_crash's tab was closed inside it: each ran once
      // without an EXECUTE decision.
      const crashed = call === "call_crash" || call === "call_tab_crash" ? 1 : 0
      // Tab A shows counts another tab changed at its next refresh (every 250 ms): wait for it, never past it.
      await expect.poll(() => executions(a, call), { message: call, timeout: 5_000 }).toBe(executed + crashed)
    }
    expect(await a.locator("#rows tbody tr").count()).toBe(5)
    // Every outcome both tabs recorded is one signed receipt in one chain, verified in the page.
    await a.locator("#receipts", { hasText: "send_payment completed" }).waitFor({ timeout: 20_000 })
    const panel = (await a.locator("#receipts").textContent()) ?? ""
    expect(panel).toMatch(/^(\d+) receipts, \1 of \1 verified \(signature and chain\)/)
    expect(panel).toContain("send_payment completed")

    mkdirSync(artifacts, { recursive: true })
    await a.screenshot({ path: `${artifacts}browser-demo.png`, fullPage: true })
    await b.screenshot({ path: `${artifacts}browser-demo-second-tab.png`, fullPage: true })
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)
})
