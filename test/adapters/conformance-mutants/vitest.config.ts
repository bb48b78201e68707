// Runs only the mutant stores (adversarial-conformance.test.ts spawns it): they are meant to fail the suite.
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/adapters/conformance-mutants/*.mutant.ts"],
    environment: "node",
    testTimeout: 30_000,
  },
})
