// The esbuild options of every bundle a test runs under `node`: child scripts, chaos workers and the CLI.
import type { BuildOptions } from "esbuild"

export const nodeBundle = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // package.json's sideEffects names dist files: read literally it drops src's import of async-context.ts.
  ignoreAnnotations: true,
  logLevel: "error",
  // The CommonJS packages (the Neon driver's `ws`) require Node built-ins, which an ESM bundle does through this.
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);',
  },
} satisfies BuildOptions
