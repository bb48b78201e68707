import { cloudflareTest } from "@cloudflare/vitest-pool-workers"
import { playwright } from "@vitest/browser-playwright"
import { defineConfig } from "vitest/config"

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

// One run, several runtimes. Each project is a real environment, never a mock of one:
// - node: the core and the Node-side adapters against real local services
// - workers: inside workerd (the Durable Object adapter, the edge worker), configured by wrangler.toml
// - browser: headless Chromium with its real IndexedDB
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "node",
          include: ["test/**/*.test.ts"],
          exclude: ["test/workers/**", "test/browser/**", "node_modules/**"],
          environment: "node",
          testTimeout: 30_000,
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
          include: ["test/workers/**/*.test.ts"],
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: "browser",
          include: ["test/browser/**/*.test.ts"],
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
    ],
  },
})
