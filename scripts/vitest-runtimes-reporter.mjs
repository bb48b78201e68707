// A vitest reporter for scripts/test.mjs: per project (= runtime), the test modules it ran and its pass/fail
// counts, written to the file named by VITEST_RUNTIMES_REPORT. The JSON reporter does not say which project
// ran a module, and the same module runs in every project.
import { writeFileSync } from "node:fs"
import { relative } from "node:path"

export default class RuntimesReporter {
  onTestRunEnd(testModules) {
    const out = {}
    for (const m of testModules) {
      const name = m.project.name
      out[name] ??= { modules: [], passed: 0, failed: 0, skipped: 0 }
      out[name].modules.push(relative(process.cwd(), m.moduleId))
      for (const t of m.children.allTests()) {
        const state = t.result().state
        if (state === "passed") out[name].passed++
        else if (state === "failed") out[name].failed++
        else if (state === "skipped") out[name].skipped++
      }
      if (m.state() === "failed" && !m.children.size) out[name].failed++
    }
    writeFileSync(process.env.VITEST_RUNTIMES_REPORT ?? ".vitest-runtimes.json", JSON.stringify(out, null, 2))
  }
}
