// The same test modules in every runtime (test/runtimes/modules.json): runs them under Deno (`deno test`, vitest
// mapped onto Deno.test by test/runtimes/deno/) and Bun (`bun test`, which maps `vitest` onto bun:test itself),
// and checks that each runtime, including the vitest projects, ran every module it owes. A runtime whose glue is
// gone runs nothing, and that is a failure here, never a skip.
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"

export const MODULES = JSON.parse(readFileSync("test/runtimes/modules.json", "utf8"))
export const VITEST_RUNTIMES = ["node", "workers", "browser", "edge"]
export const expectedModules = (runtime) => [...MODULES.shared, ...(MODULES.own[runtime] ?? [])]

// NO_COLOR is set, but a runner may still color; ESC is built from its code so the pattern has no control character.
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g")
const strip = (s) => s.replace(ANSI, "")

/** Modules a runtime owes but did not run (module paths relative to the repository root). */
export function missingModules(expected, ran) {
  const seen = new Set(ran.map((m) => m.replace(/^\.\//, "")))
  return expected.filter((m) => !seen.has(m))
}

// Async, so scripts/test.mjs runs Deno and Bun side by side; each runner's output is kept whole (its `output`), for
// printing one after the other instead of interleaved.
function run(cmd, args) {
  const maxBuffer = 64 * 1024 * 1024
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
    })
    const stdout = []
    const stderr = []
    let size = 0
    // As spawnSync's timeout and maxBuffer did: the runner is stopped and the run fails.
    const stop = () => child.kill("SIGTERM")
    const timer = setTimeout(stop, 15 * 60_000)
    const collect = (into) => (chunk) => {
      into.push(chunk)
      size += chunk.length
      if (size > maxBuffer) stop()
    }
    child.stdout.on("data", collect(stdout))
    child.stderr.on("data", collect(stderr))
    const done = (status) => {
      clearTimeout(timer)
      const out = strip(`${Buffer.concat(stdout)}\n${Buffer.concat(stderr)}`)
      resolve({ status: size > maxBuffer ? 1 : (status ?? 1), out })
    }
    child.on("error", (e) => {
      stderr.push(Buffer.from(`${cmd}: ${e.message}\n`))
      done(1)
    })
    child.on("close", done)
  })
}

/** `deno test`: every module through the vitest shim; counts from its summary line. */
export async function runDeno({
  importMap = "test/runtimes/deno/import-map.json",
  files = expectedModules("deno"),
  // Off where a test breaks Deno on purpose (its crash output is expected, not something to read), and where the
  // caller prints `output` itself.
  echo = true,
} = {}) {
  const { status, out } = await run("node_modules/.bin/deno", [
    "test",
    "--allow-all",
    "--no-check", // tsc type-checks these modules; Deno's own check would only repeat it
    "--import-map",
    importMap,
    ...files,
  ])
  const ran = [...out.matchAll(/^running \d+ tests? from (\S+)$/gm)].map((m) => m[1])
  const sum = /(?:ok|FAILED) \| (\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed/.exec(out)
  const names = [...out.matchAll(/^(.+) \.\.\. FAILED\b/gm)].map((m) => m[1])
  return echoed(
    echo,
    summarize("deno", files, status, out, ran, sum ? Number(sum[1]) : 0, sum ? Number(sum[2]) : 0, names),
  )
}

/** `bun test`: Bun rewrites `import … from "vitest"` to its own bun:test. */
export async function runBun({ echo = true } = {}) {
  const files = expectedModules("bun")
  // The vitest projects' 30 s per test, not Bun's 5 s: a linear-time check of 32,000 messages is slower on a loaded
  // 2-core machine, and its counts, not the clock, are what it asserts.
  const args = ["test", "--timeout", "30000", ...files.map((f) => `./${f}`)]
  const { status, out } = await run("node_modules/.bin/bun", args)
  const ran = [...out.matchAll(/^(test\/\S+\.test\.ts):$/gm)].map((m) => m[1])
  const pass = /^\s*(\d+) pass$/m.exec(out)
  const fail = /^\s*(\d+) fail$/m.exec(out)
  const names = [...out.matchAll(/^\(fail\) (.+?)(?: \[[\d.]+m?s\])?$/gm)].map((m) => m[1])
  return echoed(
    echo,
    summarize("bun", files, status, out, ran, pass ? Number(pass[1]) : 0, fail ? Number(fail[1]) : 0, names),
  )
}

function echoed(echo, result) {
  if (echo) process.stdout.write(result.output)
  return result
}

/** Runners without a runtime skip log "skipped: …" and pass; those are skips, not passes. */
const skips = (out) => (out.match(/^skipped: /gm) ?? []).length

function summarize(runtime, files, status, out, ran, passed, failed, names = []) {
  const skipped = skips(out)
  passed -= skipped
  const missing = missingModules(files, ran)
  // A crash before the summary, or a module that never ran, counts as a failure even with no failed test.
  const broken = (status !== 0 && failed === 0 ? 1 : 0) + missing.length
  const output = missing.length ? `${out}\n${runtime}: did not run ${missing.join(", ")}\n` : out
  // Unique names only: Deno lists a failure once as it runs and again in its summary.
  const failures = [...new Set(names)].map((n) => `${runtime}: ${n}`)
  for (const m of missing) failures.push(`${runtime}: did not run ${m}`)
  return { runtime, passed, failed: failed + broken, skipped, modules: ran.length, failures, output }
}

/** The vitest projects, from scripts/vitest-runtimes-reporter.mjs's file. */
export function vitestRuntimes(report) {
  return VITEST_RUNTIMES.map((runtime) => {
    // A browser project reports per instance, e.g. "browser (chromium)".
    const parts = Object.entries(report)
      .filter(([name]) => name === runtime || name.startsWith(`${runtime} (`))
      .map(([, r]) => r)
    const r = {
      modules: parts.flatMap((p) => p.modules),
      passed: parts.reduce((n, p) => n + p.passed, 0),
      failed: parts.reduce((n, p) => n + p.failed, 0),
      skipped: parts.reduce((n, p) => n + (p.skipped ?? 0), 0),
    }
    const missing = missingModules(expectedModules(runtime), r.modules)
    if (missing.length) console.error(`\n${runtime}: did not run ${missing.join(", ")}`)
    return {
      runtime,
      passed: r.passed,
      failed: r.failed + missing.length,
      skipped: r.skipped ?? 0,
      modules: r.modules.length,
      missing: missing.length,
    }
  })
}
