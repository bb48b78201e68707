import { availableParallelism } from "node:os"
import { cloudflareTest } from "@cloudflare/vitest-pool-workers"
import { playwright } from "@vitest/browser-playwright"
import { defineConfig } from "vitest/config"
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
    projects: [
      {
        test: {
          name: "node",
          include: ["test/**/*.test.ts"],
          exclude: ["test/workers/**", "test/browser/**", "node_modules/**", ...edgeOnly],
          environment: "node",
          testTimeout: 30_000,
          globalSetup: ["test/cli/build-cli.ts"],
        },
      },
      {
        plugins: [
          // nodejs_compat only for tests that use node:async_hooks (session propagation); the worker has none.
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { compatibilityFlags: ["nodejs_compat"] },
          }),
        ],
        test: {
          name: "workers",
          include: ["test/workers/**/*.test.ts", ...modulesOf("workers")],
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
          include: [...new Set([...modulesOf("edge"), ...edgeOnly])],
          environment: "edge-runtime",
          testTimeout: 30_000,
        },
      },
    ],
  },
})
