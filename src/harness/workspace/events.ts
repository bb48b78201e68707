// Workspace actions and observations: plain frozen records discriminated by `kind`, so they cross a wire as JSON
// and come back as the same subtype (`parseAction`, `parseObservation`).
import { MyceliumError } from "../../core/errors.ts"
import { clip, safeString } from "../../core/repr.ts"
import { isTestFramework, TEST_FRAMEWORKS, type TestFramework } from "./frameworks.ts"

export interface Stamp {
  readonly run_id: string
  readonly step: number
  /** Epoch seconds. */
  readonly ts: number
  readonly actor: string | null
}

export interface CmdRun extends Stamp {
  readonly kind: "cmd_run"
  readonly command: string
  readonly cwd: string | null
  /** Seconds. */
  readonly timeout: number
}
export interface FileRead extends Stamp {
  readonly kind: "file_read"
  readonly path: string
  /** 1-based inclusive line range. */
  readonly start: number | null
  readonly end: number | null
}
export interface FileWrite extends Stamp {
  readonly kind: "file_write"
  readonly path: string
  readonly content: string
}
export interface FileEdit extends Stamp {
  readonly kind: "file_edit"
  readonly path: string
  readonly old: string
  readonly new: string
  readonly replace_all: boolean
}
export type { TestFramework }
export interface TestRun extends Stamp {
  readonly kind: "test_run"
  readonly selector: string | null
  readonly framework: TestFramework
  readonly cwd: string | null
  readonly timeout: number
}
export interface PortExpose extends Stamp {
  readonly kind: "port_expose"
  readonly port: number
}
export interface Browse extends Stamp {
  readonly kind: "browse"
  readonly url: string
  readonly interaction: string
}
export interface ComputerUse extends Stamp {
  readonly kind: "computer_use"
  readonly op: string
}
export interface AgentFinish extends Stamp {
  readonly kind: "agent_finish"
  readonly summary: string
}

export type WorkspaceAction =
  | CmdRun
  | FileRead
  | FileWrite
  | FileEdit
  | TestRun
  | PortExpose
  | Browse
  | ComputerUse
  | AgentFinish

const UNSTAMPED: Stamp = { run_id: "", step: 0, ts: 0, actor: null }

/** What an action constructor takes: the fields `Req` it needs, and any other field but `kind` (which it sets). */
export type ActionInit<T extends WorkspaceAction, Req extends keyof T> = Pick<T, Req> &
  Partial<Omit<T, "kind" | Req>>

export function CmdRunAction(init: ActionInit<CmdRun, "command">): CmdRun {
  return Object.freeze({ ...UNSTAMPED, cwd: null, timeout: 120, ...init, kind: "cmd_run" })
}
export function FileReadAction(init: ActionInit<FileRead, "path">): FileRead {
  return Object.freeze({ ...UNSTAMPED, start: null, end: null, ...init, kind: "file_read" })
}
export function FileWriteAction(init: ActionInit<FileWrite, "path" | "content">): FileWrite {
  return Object.freeze({ ...UNSTAMPED, ...init, kind: "file_write" })
}
export function FileEditAction(init: ActionInit<FileEdit, "path" | "old" | "new">): FileEdit {
  return Object.freeze({ ...UNSTAMPED, replace_all: false, ...init, kind: "file_edit" })
}
export function TestRunAction(init: Partial<Omit<TestRun, "kind">> = {}): TestRun {
  return Object.freeze({
    ...UNSTAMPED,
    selector: null,
    framework: "pytest",
    cwd: null,
    timeout: 600,
    ...init,
    kind: "test_run",
  })
}
export function PortExposeAction(init: ActionInit<PortExpose, "port">): PortExpose {
  return Object.freeze({ ...UNSTAMPED, ...init, kind: "port_expose" })
}
export function BrowseAction(init: Partial<Omit<Browse, "kind">> = {}): Browse {
  return Object.freeze({ ...UNSTAMPED, url: "", interaction: "", ...init, kind: "browse" })
}
export function ComputerUseAction(init: Partial<Omit<ComputerUse, "kind">> = {}): ComputerUse {
  return Object.freeze({ ...UNSTAMPED, op: "capture", ...init, kind: "computer_use" })
}
export function AgentFinishAction(init: Partial<Omit<AgentFinish, "kind">> = {}): AgentFinish {
  return Object.freeze({ ...UNSTAMPED, summary: "", ...init, kind: "agent_finish" })
}

/** The policy name each mutating action is checked under; read-only actions have none. */
export function policyName(action: WorkspaceAction): string | null {
  switch (action.kind) {
    case "cmd_run":
    case "test_run":
      return "workspace.cmd"
    case "file_write":
      return "workspace.write"
    case "file_edit":
      return "workspace.edit"
    case "browse":
      return "workspace.browse"
    case "computer_use":
      return action.op === "capture" ? null : "workspace.computer_use"
    default:
      return null
  }
}

/** Exactly the five policy names a gate may be asked about. */
export const MUTATING_POLICY_NAMES: readonly string[] = Object.freeze([
  "workspace.cmd",
  "workspace.write",
  "workspace.edit",
  "workspace.browse",
  "workspace.computer_use",
])

// Observations.
export interface CmdOutputObservation extends Stamp {
  readonly kind: "cmd_output"
  readonly exit_code: number
  readonly stdout: string
  readonly stderr: string
  /** The shell's cwd after the command. */
  readonly cwd: string
}
export interface FileContentObservation extends Stamp {
  readonly kind: "file_content"
  readonly path: string
  readonly content: string
}
export interface FileWriteObservation extends Stamp {
  readonly kind: "file_write_ok"
  readonly path: string
  readonly bytes_written: number
}
export interface FileEditObservation extends Stamp {
  readonly kind: "file_edit_ok"
  readonly path: string
  readonly diff: string
  readonly applied: true
  readonly replacements: number
}
export interface TestResultObservation extends Stamp {
  readonly kind: "test_result"
  readonly passed: number
  readonly failed: number
  readonly errors: number
  readonly exit_code: number
  readonly report: string
  readonly raw: string
}
export interface PortObservation extends Stamp {
  readonly kind: "port"
  readonly port: number
  readonly url: string
}
export interface BrowserObservation extends Stamp {
  readonly kind: "browser"
  readonly url: string
  readonly error: string
}
export interface ScreenObservation extends Stamp {
  readonly kind: "screen"
  readonly error: string
}
export interface ErrorObservation extends Stamp {
  readonly kind: "error"
  readonly message: string
  readonly action_kind: string
}
export interface NullObservation extends Stamp {
  readonly kind: "null"
}

export type WorkspaceObservation =
  | CmdOutputObservation
  | FileContentObservation
  | FileWriteObservation
  | FileEditObservation
  | TestResultObservation
  | PortObservation
  | BrowserObservation
  | ScreenObservation
  | ErrorObservation
  | NullObservation

/** Thrown by `parseAction` / `parseObservation` for input that is not exactly one known subtype. */
export class WorkspaceEventParseError extends MyceliumError {
  override readonly name = "WorkspaceEventParseError"
  override readonly code = "invalid_workspace_event"
}

type FieldType = "string" | "number" | "boolean" | "string?" | "number?"
const STAMP_FIELDS: Record<string, FieldType> = { run_id: "string", step: "number", ts: "number" }
const ACTION_FIELDS: Record<WorkspaceAction["kind"], Record<string, FieldType>> = {
  cmd_run: { command: "string", cwd: "string?", timeout: "number" },
  file_read: { path: "string", start: "number?", end: "number?" },
  file_write: { path: "string", content: "string" },
  file_edit: { path: "string", old: "string", new: "string", replace_all: "boolean" },
  test_run: { selector: "string?", framework: "string", cwd: "string?", timeout: "number" },
  port_expose: { port: "number" },
  browse: { url: "string", interaction: "string" },
  computer_use: { op: "string" },
  agent_finish: { summary: "string" },
}
const MAKERS: Record<WorkspaceAction["kind"], (init: never) => WorkspaceAction> = {
  cmd_run: CmdRunAction,
  file_read: FileReadAction,
  file_write: FileWriteAction,
  file_edit: FileEditAction,
  test_run: TestRunAction,
  port_expose: PortExposeAction,
  browse: BrowseAction,
  computer_use: ComputerUseAction,
  agent_finish: AgentFinishAction,
}

function checkFields(obj: Record<string, unknown>, fields: Record<string, FieldType>, what: string): void {
  for (const [k, t] of Object.entries(fields)) {
    const v = obj[k]
    if (v === undefined) continue // defaults fill it
    const optional = t.endsWith("?")
    if (optional && v === null) continue
    if (typeof v !== t.replace("?", ""))
      throw new WorkspaceEventParseError(`${what}.${k} must be a ${t.replace("?", "")}`)
  }
}

/** A wire dict back to its exact action subtype; unknown kinds and wrong field types are refused. */
export function parseAction(input: unknown): WorkspaceAction {
  if (typeof input !== "object" || input === null || Array.isArray(input))
    throw new WorkspaceEventParseError("an action must be an object")
  const obj = input as Record<string, unknown>
  const kind = obj.kind
  // Own keys only: `in` also found "__proto__", "constructor" and the other Object.prototype names.
  if (typeof kind !== "string" || !Object.hasOwn(ACTION_FIELDS, kind))
    throw new WorkspaceEventParseError(`unknown action kind '${clip(safeString(kind))}'`)
  const k = kind as WorkspaceAction["kind"]
  checkFields(obj, { ...STAMP_FIELDS, ...ACTION_FIELDS[k] }, kind)
  if (obj.actor !== undefined && obj.actor !== null && typeof obj.actor !== "string")
    throw new WorkspaceEventParseError(`${kind}.actor must be a string or null`)
  if (k === "test_run" && obj.framework !== undefined && !isTestFramework(obj.framework))
    throw new WorkspaceEventParseError(`test_run.framework must be one of ${TEST_FRAMEWORKS.join(", ")}`)
  const { kind: _drop, ...rest } = obj
  const known = new Set([...Object.keys(STAMP_FIELDS), "actor", ...Object.keys(ACTION_FIELDS[k])])
  for (const key of Object.keys(rest))
    if (!known.has(key)) throw new WorkspaceEventParseError(`${kind} has no field '${clip(key)}'`)
  return (MAKERS[k] as (init: Record<string, unknown>) => WorkspaceAction)(rest)
}

const OBSERVATION_KINDS = new Set([
  "cmd_output",
  "file_content",
  "file_write_ok",
  "file_edit_ok",
  "test_result",
  "port",
  "browser",
  "screen",
  "error",
  "null",
])

/** A wire dict back to an observation; only the kind is checked (observations come from the workspace). */
export function parseObservation(input: unknown): WorkspaceObservation {
  if (typeof input !== "object" || input === null || Array.isArray(input))
    throw new WorkspaceEventParseError("an observation must be an object")
  const kind = (input as { kind?: unknown }).kind
  if (typeof kind !== "string" || !OBSERVATION_KINDS.has(kind))
    throw new WorkspaceEventParseError(`unknown observation kind '${clip(safeString(kind))}'`)
  return Object.freeze({ ...(input as WorkspaceObservation) })
}
