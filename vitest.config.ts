import { readdirSync, readFileSync } from "node:fs"
import { availableParallelism } from "node:os"
import { cloudflareTest } from "@cloudflare/vitest-pool-workers"
import { playwright } from "@vitest/browser-playwright"
import { configDefaults, defineConfig } from "vitest/config"
import modules from "./test/runtimes/modules.json" with { type: "json" }

// Debian's chromium in a root container: no sandbox, no GPU, small /dev/shm, no phoning home.
const chromiumArgs = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
  "--no-first-run",
]

// Modules written for the Vercel edge runtime alone (`@vitest-environment edge-runtime`): the node project leaves
// them to the edge project.
const edgeOnly = ["test/runtimes/vercel-edge.test.ts", "test/adapters/servers-edge.test.ts"]
// A runtime's modules: the shared ones and its own (scripts/runtime-suites.mjs checks each project ran them all).
const modulesOf = (runtime: keyof typeof modules.own) => [...modules.shared, ...modules.own[runtime]]

// The node, workers and edge projects run their modules in shared workers (isolate: false): the package and its
// dependencies are then imported once per worker instead of once per file, and workerd starts once, not per file
// (CI's 2-core run: 849 s instead of 1,130). These need a module graph and a process of their own, so they run in an
// isolated companion project:
// - a module mock (vi.mock) replaces a module only in a graph that has not loaded it yet: every file using one;
// - what a file checks as the first import sees it: zod's global configuration;
// - process-wide switches made once at start-up (AsyncLocalStorage turned off before a run's scope is first made);
// - fake timers whose count must fall to zero: an earlier module's leftover work would keep adding timers.
// Not under __screenshots__: a failed browser test leaves a folder there named after its file (`x.test.ts/`), and
// reading it as a test file stopped every later run at start-up (EISDIR).
const testFiles = readdirSync("test", { recursive: true, encoding: "utf8" })
  .map((f) => `test/${f.replaceAll("\\", "/")}`)
  .filter((f) => f.endsWith(".test.ts") && !f.includes("/__screenshots__/"))
const nodeTests = testFiles.filter((f) => !/^test\/(workers|browser)\//.test(f) && !edgeOnly.includes(f))
const isolated = [
  ...testFiles.filter((f) => readFileSync(f, "utf8").includes("vi.mock(")),
  "test/core/config/zod-global.test.ts",
  "test/edge/zod-config.test.ts",
  "test/core/context/session-no-als.test.ts",
  "test/core/harness/property-chaos.test.ts",
]

// nodejs_compat only for tests that use node:async_hooks (session propagation); the worker has none.
const workerd = () =>
  cloudflareTest({
    wrangler: { configPath: "./wrangler.toml" },
    miniflare: { compatibilityFlags: ["nodejs_compat"] },
  })
// Modules that make hundreds of Durable Objects each: in a workerd shared with the modules before them they ran 2 to 5
// times slower (the conformance run over HTTP took 104 s instead of 20), so each gets a workerd of its own.
const ownWorkerd = [
  "test/workers/durable-object.test.ts",
  "test/workers/http-over-durable-object.test.ts",
  "test/workers/model-durable-object.test.ts",
]
// A renamed module would otherwise slip back into the shared workers unnoticed.
const missing = [...isolated, ...ownWorkerd].filter((f) => !testFiles.includes(f))
if (missing.length) throw new Error(`vitest.config.ts: no test module ${missing.join(", ")}`)
// A shared-workers project leaves `isolated` to its companion, which runs those of them that are its runtime's.
const shared = (alone: readonly string[] = []) => ({
  isolate: false,
  exclude: [...configDefaults.exclude, ...isolated, ...alone],
})
const isolatedOf = (files: readonly string[]) => isolated.filter((f) => files.includes(f))
const edgeModules = [...new Set([...modulesOf("edge"), ...edgeOnly])]

// One run, several runtimes. Each project is a real environment, never a mock of one, and each runs the same
// runtime-neutral modules (test/runtimes/modules.json) besides its own (Deno and Bun run them in scripts/test.mjs):
// - node: the core and the Node-side adapters against real local services
// - workers: inside workerd (the Durable Object adapter, the edge worker), configured by wrangler.toml
// - browser: headless Chromium with its real IndexedDB
// - edge: Vercel's edge runtime (@edge-runtime/vm), no Node globals
export default defineConfig({
  test: {
    // Vitest's run mode takes one core less than the machine has: one test file at a time on the 2-core CI machine,
    // whose cores then idled 40% of the run while tests waited on timers, child processes and the services.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // Companions are named "<runtime> (isolated)": scripts/runtime-suites.mjs counts them with their runtime.
    projects: [
      {
        test: {
          name: "node",
          include: nodeTests,
          ...shared(),
          environment: "node",
          testTimeout: 30_000,
          globalSetup: ["test/cli/build-cli.ts"],
        },
      },
      {
        test: {
          name: "node (isolated)",
          include: isolatedOf(nodeTests),
          environment: "node",
          testTimeout: 30_000,
        },
      },
      {
        plugins: [workerd()],
        test: {
          name: "workers",
          include: ["test/workers/**/*.test.ts", ...modulesOf("workers")],
          ...shared(ownWorkerd),
          testTimeout: 30_000,
        },
      },
      {
        plugins: [workerd()],
        test: {
          name: "workers (isolated)",
          include: [...ownWorkerd, ...isolatedOf(modulesOf("workers"))],
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: "browser",
          include: ["test/browser/**/*.test.ts", ...modulesOf("browser")],
          testTimeout: 30_000,
          browser: {
            enabled: true,
            headless: true,
            instances: [{ browser: "chromium" }],
            provider: playwright({
              launchOptions: { executablePath: "/usr/bin/chromium", args: chromiumArgs },
            }),
          },
        },
      },
      {
        test: {
          name: "edge",
          include: edgeModules,
          ...shared(),
          environment: "edge-runtime",
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: "edge (isolated)",
          include: isolatedOf(edgeModules),
          environment: "edge-runtime",
          testTimeout: 30_000,
        },
      },
    ],
  },
})
