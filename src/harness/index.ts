// `mycelium-runtime/harness`: the in-run agent harness. Runtime-neutral (it lives in src/core/harness); the Node,
// Deno and Bun workspace is the separate entry `mycelium-runtime/harness/workspace`.
export * from "../core/harness/index.ts"
