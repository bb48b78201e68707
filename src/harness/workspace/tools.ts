// The workspace as harness tools: a task's model drives the shell and files through typed actions, the policy
// gate still applies, and each observation goes back to the model as JSON.
import type { HarnessTool } from "../../core/harness/index.ts"
import {
  CmdRunAction,
  FileEditAction,
  FileReadAction,
  FileWriteAction,
  TestRunAction,
  type WorkspaceAction,
} from "./events.ts"
import { isTestFramework, TEST_FRAMEWORKS } from "./frameworks.ts"
import type { DevWorkspace } from "./workspace.ts"

const str = { type: "string" } as const
const num = { type: "number" } as const

function tool(
  ws: DevWorkspace,
  name: string,
  description: string,
  properties: Record<string, unknown>,
  required: string[],
  make: (args: Record<string, unknown>) => WorkspaceAction,
): HarnessTool {
  return {
    name,
    description,
    parameters: { type: "object", properties, required, additionalProperties: false },
    async execute(args, ctx) {
      let action: WorkspaceAction
      try {
        action = make(args)
      } catch (e) {
        return { kind: "error", message: (e as Error).message, action_kind: name }
      }
      // Observations are data, never throws: the model reads errors and decides what to do.
      const { run_id: _r, ts: _t, actor: _a, ...obs } = await ws.act(action, { signal: ctx.signal })
      return obs
    },
  }
}

function need(args: Record<string, unknown>, key: string): string {
  const v = args[key]
  if (typeof v !== "string") throw new TypeError(`'${key}' must be a string`)
  return v
}
const opt = <T>(args: Record<string, unknown>, key: string, type: string): T | undefined =>
  typeof args[key] === type ? (args[key] as T) : undefined

/** `cmd_run`, `file_read`, `file_write`, `file_edit` and `test_run` over one workspace. */
export function workspaceTools(ws: DevWorkspace): HarnessTool[] {
  return [
    tool(
      ws,
      "cmd_run",
      "Run a bash command; `cd` persists between calls.",
      { command: str, cwd: str, timeout: num },
      ["command"],
      (a) =>
        CmdRunAction({
          command: need(a, "command"),
          cwd: opt<string>(a, "cwd", "string") ?? null,
          timeout: opt<number>(a, "timeout", "number") ?? 120,
        }),
    ),
    tool(
      ws,
      "file_read",
      "Read a file; optional 1-based inclusive line range.",
      { path: str, start: num, end: num },
      ["path"],
      (a) =>
        FileReadAction({
          path: need(a, "path"),
          start: opt<number>(a, "start", "number") ?? null,
          end: opt<number>(a, "end", "number") ?? null,
        }),
    ),
    tool(
      ws,
      "file_write",
      "Create or overwrite a file.",
      { path: str, content: str },
      ["path", "content"],
      (a) => FileWriteAction({ path: need(a, "path"), content: need(a, "content") }),
    ),
    tool(
      ws,
      "file_edit",
      "Replace a unique string in a file (or every occurrence with replace_all).",
      { path: str, old: str, new: str, replace_all: { type: "boolean" } },
      ["path", "old", "new"],
      (a) =>
        FileEditAction({
          path: need(a, "path"),
          old: need(a, "old"),
          new: need(a, "new"),
          replace_all: a.replace_all === true,
        }),
    ),
    tool(
      ws,
      "test_run",
      "Run tests and get pass/fail counts.",
      { selector: str, framework: { type: "string", enum: [...TEST_FRAMEWORKS] } },
      [],
      (a) => {
        const framework = a.framework ?? "pytest"
        // A cast let any string through, and the workspace ran an unknown one as `custom`: its selector as a command.
        if (!isTestFramework(framework))
          throw new TypeError(`'framework' must be one of ${TEST_FRAMEWORKS.join(", ")}`)
        return TestRunAction({ selector: opt<string>(a, "selector", "string") ?? null, framework })
      },
    ),
  ]
}
