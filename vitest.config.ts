import { defineConfig } from "vitest/config"

// One run, several runtimes. Each project is a real environment, never a mock of one:
// - node: the core and the Node-side adapters against real local services
// (workers and browser projects are added by their adapters' setup)
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
    ],
  },
})
