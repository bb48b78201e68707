// The `mycelium-runtime/config` entry: mycelium.yaml in any runtime (pass the text and the environment). Its own
// entry because the YAML parser and zod are too big for the core entry; Node, Deno and Bun read files with
// `loadConfig` from `mycelium-runtime/node/config`.
export * from "./core/config/index.ts"
