// `mycelium-runtime/harness/workspace`: the developer workspace for Node, Deno and Bun.
export * from "./events.ts"
export { MAX_FILE_BYTES, MAX_PATH_CHARS, WorkspacePathError } from "./safe-fs.ts"
export { MAX_STREAM_CHARS } from "./shell.ts"
export { parseTestSummary, type TestCounts } from "./test-report.ts"
export { workspaceTools } from "./tools.ts"
export {
  createWorkspace,
  DevWorkspace,
  type PolicyGate,
  type PolicyVerdict,
  type ShellState,
  unifiedDiff,
  type WorkspaceActOptions,
  WorkspaceNotStartedError,
  type WorkspaceOptions,
  withWorkspace,
} from "./workspace.ts"
