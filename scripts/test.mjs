// `npm test`: lint, typecheck, docs, the packed package, then every vitest project; ends with the plain `N passed, N failed` line that CI
// reads. Exits non-zero if any step fails.
import { spawn, spawnSync } from "node:child_process"
import { existsSync, readFileSync, rmSync } from "node:fs"
import { runBun, runDeno, vitestRuntimes } from "./runtime-suites.mjs"

const firstLine = (text) =>
  String(text ?? "")
    .split("\n")[0]
    .slice(0, 300)
/** Runs a step with its output kept, to print whole: steps run side by side. */
const runStep = ([cmd, args]) =>
  new Promise((resolve) => {
    const child = spawn(cmd, args, { env: process.env, stdio: ["ignore", "pipe", "pipe"] })
    const out = []
    child.stdout.on("data", (d) => out.push(d))
    child.stderr.on("data", (d) => out.push(d))
    child.on("error", (e) => resolve({ status: 1, output: `${e.message}\n` }))
    child.on("close", (status) => resolve({ status: status ?? 1, output: Buffer.concat(out).toString() }))
  })

const steps = [
  ["biome", ["npx", ["biome", "check", "."]]],
  ["typecheck", ["npx", ["tsc", "-p", "tsconfig.json", "--noEmit"]]],
  // workerd and browser tests have their own globals, hence their own projects.
  ["typecheck (workers)", ["npx", ["tsc", "-p", "test/workers/tsconfig.json", "--noEmit"]]],
  ["typecheck (browser)", ["npx", ["tsc", "-p", "test/browser/tsconfig.json", "--noEmit"]]],
  // Every TypeScript block in README.md and docs/*.md compiles.
  ["docs code blocks", ["node", ["scripts/check-docs.mjs"]]],
]
// Two at a time: the type checks are single-threaded, and CI has 2 cores. The package step runs alone after them,
// as its build rewrites dist/, which the type checks read.
const lanes = [Promise.resolve(), Promise.resolve()]
const started = steps.map((step, i) => {
  const done = lanes[i % 2].then(() => runStep(step[1]))
  lanes[i % 2] = done
  return done
})
const stages = [
  ...started.map((done, i) => [steps[i][0], done]),
  // The packed tarball: publint, attw, bundle sizes, a scratch consumer with no optional peers, and the storage
  // conformance suite run from it under vitest as an adapter author runs it.
  ["package", Promise.all(started).then(() => runStep(["node", ["scripts/check-package.mjs"]]))],
]
for (const [name, done] of stages) {
  const { status, output } = await done
  process.stdout.write(output)
  if (status !== 0) {
    console.error(`\n${name} failed`)
    console.log("0 passed, 1 failed")
    process.exit(1)
  }
}

const report = ".vitest.json"
const runtimesReport = ".vitest-runtimes.json"
rmSync(report, { force: true })
rmSync(runtimesReport, { force: true })
const extra = process.argv.slice(2)
const rc = spawnSync(
  "npx",
  [
    "vitest",
    "run",
    "--reporter=default",
    "--reporter=json",
    "--reporter=./scripts/vitest-runtimes-reporter.mjs",
    `--outputFile.json=${report}`,
    ...extra,
  ],
  { stdio: "inherit", env: { ...process.env, VITEST_RUNTIMES_REPORT: runtimesReport } },
).status
let passed = 0
let failed = rc === 0 ? 0 : 1
// CI keeps only the tail of the output, so the names of failed tests are repeated at the end.
const failures = []
if (existsSync(report)) {
  const r = JSON.parse(readFileSync(report, "utf8"))
  passed = r.numPassedTests
  failed = r.numFailedTests + (rc !== 0 && r.numFailedTests === 0 ? 1 : 0)
  if (rc !== 0 && r.numFailedTests === 0)
    failures.push(
      "vitest exited non-zero with no failed test: an unhandled error (see 'Unhandled Errors' above)",
    )
  if (r.numTotalTests === 0) failed = Math.max(failed, 1)
  for (const file of r.testResults ?? []) {
    const name = file.name.replace(`${process.cwd()}/`, "")
    if (file.status === "failed" && !file.assertionResults?.some((a) => a.status === "failed")) {
      failures.push(`${name}: ${firstLine(file.message)}`)
    }
    for (const a of file.assertionResults ?? []) {
      if (a.status === "failed")
        failures.push(`${name} > ${a.fullName}: ${firstLine(a.failureMessages?.[0])}`)
    }
  }
}

// The same modules in six runtimes: the four vitest projects must each have run theirs (a filtered run, with
// arguments, checks nothing), then Deno and Bun run them with their own test runners.
if (extra.length === 0) {
  const perRuntime = existsSync(runtimesReport)
    ? vitestRuntimes(JSON.parse(readFileSync(runtimesReport, "utf8")))
    : [{ runtime: "vitest", passed: 0, failed: 1, skipped: 0, modules: 0, missing: 1 }]
  // Their test failures are in the JSON counts already; a module a runtime did not run is one failure more.
  failed += perRuntime.reduce((n, r) => n + r.missing, 0)
  // Side by side (each is mostly one process on one core), their outputs printed whole, Deno's first.
  for (const r of await Promise.all([runDeno({ echo: false }), runBun({ echo: false })])) {
    process.stdout.write(r.output)
    perRuntime.push(r)
    passed += r.passed
    failed += r.failed
    failures.push(...(r.failures ?? []))
  }
  console.log("\nper runtime:")
  for (const r of perRuntime) {
    console.log(
      `  ${r.runtime.padEnd(8)} ${r.passed} passed, ${r.failed} failed, ${r.skipped ?? 0} skipped (${r.modules} modules)`,
    )
  }
}
if (failures.length > 0) {
  console.log("\nfailed:")
  for (const f of failures) console.log(`  ${f}`)
}
console.log(`${passed} passed, ${failed} failed`)
process.exit(rc === 0 && failed === 0 ? 0 : 1)
