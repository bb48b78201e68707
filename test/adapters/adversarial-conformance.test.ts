// Adversarial review of mycelium-runtime/conformance, as a third-party adapter author meets it: a store with one
// contract bug must fail the suite (two slipped through before: a prefix list that matched anywhere in the id, and
// a store that dropped the error text), the unbroken store must pass, and a cleanup that throws must not stop the
// other results' cleanups (their connections and tables would be left behind). The mutants run in their own vitest
// process (conformance-mutants/), since they are meant to fail.
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"

const dir = mkdtempSync(join(tmpdir(), "mycelium-mutants-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

interface Report {
  testResults: {
    assertionResults: { ancestorTitles: string[]; title: string; status: string }[]
    message?: string
  }[]
}

describe("the conformance suite against broken stores", () => {
  it("fails every mutant, passes the control, and runs every cleanup when one throws", async () => {
    const out = join(dir, "report.json")
    const log = join(dir, "cleanups.log")
    writeFileSync(log, "")
    let printed = ""
    const code = await new Promise<number>((done) =>
      execFile(
        resolve("node_modules/.bin/vitest"),
        [
          "run",
          "--config",
          "test/adapters/conformance-mutants/vitest.config.ts",
          "--reporter=json",
          "--reporter=default",
          `--outputFile.json=${out}`,
        ],
        { env: { ...process.env, CLEANUP_LOG: log, NO_COLOR: "1" }, maxBuffer: 64 * 1024 * 1024 },
        (error, out, err) => {
          printed = `${out}${err}`
          done(error ? ((error.code as number | undefined) ?? 1) : 0)
        },
      ),
    )
    expect(code).not.toBe(0)
    const report = JSON.parse(readFileSync(out, "utf8")) as Report
    const failed = new Map<string, number>()
    const total = new Map<string, number>()
    const failedSequences = new Set<string>()
    for (const file of report.testResults)
      for (const a of file.assertionResults) {
        const suite = (a.ancestorTitles[0] ?? "").replace("LedgerStorage conformance: ", "")
        total.set(suite, (total.get(suite) ?? 0) + 1)
        if (a.status === "failed") failed.set(suite, (failed.get(suite) ?? 0) + 1)
        if (a.status === "failed" && a.title.startsWith("seed ")) failedSequences.add(suite)
      }
    const mutants = [...total.keys()].filter((s) => s.startsWith("mutant "))
    expect(mutants.sort()).toEqual(
      [
        "findReturnsAll",
        "getDropsError",
        "nonAtomicClaim",
        "prefixIncludes",
        "transitionIgnoresLease",
        "transitionIgnoresOwner",
        "transitionIgnoresPhase",
        "transitionIgnoresBoundary",
        "claimIgnoresReclaimFence",
        "takeoverKeepsHeartbeat",
      ]
        .map((m) => `mutant ${m}`)
        .sort(),
    )
    for (const m of mutants) expect(failed.get(m) ?? 0, m).toBeGreaterThan(0)
    // The random sequences fail the store no table case catches, and never the control.
    expect([...failedSequences].sort()).toEqual(
      expect.arrayContaining([
        "mutant takeoverKeepsHeartbeat",
        "mutant transitionIgnoresOwner",
        "mutant findReturnsAll",
      ]),
    )
    expect(failedSequences.has("control")).toBe(false)
    // Likewise the task stores' swap sequences: each task mutant fails only there, the control nowhere.
    const taskFailures = (suite: string) =>
      report.testResults
        .flatMap((f) => f.assertionResults)
        .filter((a) => a.ancestorTitles[0] === `TaskStore conformance: ${suite}` && a.status === "failed")
        .map((a) => (a.title.startsWith("seed ") ? "sequence" : a.title))
    for (const m of ["insertOverwrites", "acceptsPreviousVersion"])
      expect(new Set(taskFailures(`mutant ${m}`)), m).toEqual(new Set(["sequence"]))
    expect(taskFailures("control")).toEqual([])
    expect([total.get("control"), failed.get("control") ?? 0]).toEqual([total.get("cleanup throws"), 0])
    // Every case made one result; all but the throwing first one cleaned up, and the throw failed the run.
    const cases = total.get("cleanup throws") as number
    expect(cases).toBeGreaterThan(40)
    expect(readFileSync(log, "utf8").trim().split("\n")).toHaveLength(cases - 1)
    expect(printed.includes("first cleanup failed"), "the throwing cleanup is reported").toBe(true)
  }, 120_000)
})
