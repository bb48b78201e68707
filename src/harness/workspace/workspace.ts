// The developer workspace: typed actions in, typed observations out, a stateful shell, confined file access and
// the host's policy gate in front of every mutating action. `act` never throws for failures inside the workspace.
import { randomUUID } from "node:crypto"
import { mkdtemp, realpath, rm, stat } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { InvalidOptionError, MyceliumError } from "../../core/errors.ts"
import {
  type CmdOutputObservation,
  type ErrorObservation,
  type FileEdit,
  policyName,
  type TestRun,
  type WorkspaceAction,
  type WorkspaceObservation,
} from "./events.ts"
import { isTestFramework, TEST_FRAMEWORKS } from "./frameworks.ts"
import {
  MAX_FILE_BYTES,
  MAX_PATH_CHARS,
  pathComponents,
  readSmall,
  safeRead,
  safeWrite,
  WorkspacePathError,
} from "./safe-fs.ts"
import { killGroup, MAX_STREAM_CHARS, runShell, shellQuote } from "./shell.ts"
import { parseTestSummary } from "./test-report.ts"

/** `root` or `state` read before `start()` (`withWorkspace` and the first `act()` start it for you). */
export class WorkspaceNotStartedError extends MyceliumError {
  override readonly name = "WorkspaceNotStartedError"
  override readonly code = "workspace_not_started"
  constructor() {
    super("workspace not started: await start() first (act() and withWorkspace() start it for you)")
  }
}

/** The host's decision for one mutating action. `true`/`false`, `[allowed, reason]` or `{ allowed, reason }`. */
export type PolicyVerdict =
  | boolean
  | readonly [boolean, string?]
  | { readonly allowed: boolean; readonly reason?: string }
/** Asked with one of `MUTATING_POLICY_NAMES` before a mutating action runs. */
export type PolicyGate = (policy: string, action: WorkspaceAction) => PolicyVerdict | Promise<PolicyVerdict>

export interface WorkspaceOptions {
  /** Stamped on every action and observation. Default: 32 random hex chars. */
  readonly runId?: string
  /** Work in this existing directory (kept on stop). Default: a fresh temp dir the workspace owns and deletes. */
  readonly root?: string
  readonly policyGate?: PolicyGate
  readonly actor?: string | null
  /** Environment merged over the process environment for every command. */
  readonly env?: Readonly<Record<string, string>>
}

/** Options of one `DevWorkspace.act()` call. */
export interface WorkspaceActOptions {
  /** Kills a running command's process group; its observation has exit code 128. */
  readonly signal?: AbortSignal
}

export interface ShellState {
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
}

type Body<T> = T extends WorkspaceObservation ? Omit<T, "run_id" | "step" | "ts" | "actor"> : never
type ObservationBody = Body<WorkspaceObservation>

export class DevWorkspace {
  readonly runId: string
  readonly actor: string | null
  step = 0
  #root: string | null = null
  readonly #given: string | undefined
  readonly #gate: PolicyGate | undefined
  readonly #env: Readonly<Record<string, string>>
  #state: ShellState | null = null
  #private: string | null = null
  #starting: Promise<void> | null = null
  #stopped = false
  #stopping: Promise<void> | null = null
  // Numbers each command's cwd marker.
  #commands = 0
  // The file action last queued (`#oneFileAction`).
  #files: Promise<unknown> = Promise.resolve()
  // The process groups of the commands it started, running or holding background jobs (`server &`); stop() kills them.
  readonly #groups = new Set<number>()

  constructor(options: WorkspaceOptions = {}) {
    this.runId = options.runId ?? randomUUID().replaceAll("-", "")
    this.actor = options.actor ?? null
    this.#given = options.root
    this.#gate = options.policyGate
    this.#env = options.env ?? {}
  }

  /** The workspace directory (its real path). Throws before `start()`. */
  get root(): string {
    if (this.#root === null || this.#state === null) throw new WorkspaceNotStartedError()
    return this.#root
  }

  get state(): ShellState {
    if (this.#state === null) throw new WorkspaceNotStartedError()
    return this.#state
  }

  /** Idempotent; concurrent calls share one start. After `stop()` it starts afresh (a new temp root). */
  start(): Promise<void> {
    // At once when no stop is under way: an act() right after an unawaited start() is not refused as stopped.
    if (!this.#stopping) this.#stopped = false
    // After a stop() under way: called during it, start() saw the old state, returned, and stop() then cleared it.
    this.#starting ??= (async () => {
      await this.#stopping
      this.#stopped = false
      if (!this.#state) await this.#start()
    })().finally(() => {
      this.#starting = null
    })
    return this.#starting
  }

  async #start(): Promise<void> {
    const root = this.#given ?? (await mkdtemp(join(tmpdir(), "mycelium-ws-")))
    if (!(await stat(root)).isDirectory())
      throw new InvalidOptionError(
        `workspace root ${root} is not a directory: pass a directory, or no root for a temporary one`,
      )
    const real = await realpath(root)
    // The cwd marker lives outside the workspace so it never shows up in the agent's files or `git status`.
    this.#private = await mkdtemp(join(tmpdir(), "mycelium-ws-state-"))
    this.#root = real
    this.#state = { cwd: real, env: { ...this.#env } }
  }

  /**
   * Idempotent. Kills the process groups of the commands it ran (background jobs included), then deletes the root
   * if the workspace created it. Later `act()` calls are refused.
   */
  stop(): Promise<void> {
    this.#stopped = true
    // After the stop under way, if any: a start() called during it runs after it, and this stop after that start.
    // Both read now: a start() called after this stop() waits for it, so waiting for that start would deadlock.
    const [prior, starting] = [this.#stopping, this.#starting]
    const p = (async () => {
      await prior
      await starting?.catch(() => {})
      await this.#stop()
    })()
    this.#stopping = p
    const done = () => {
      if (this.#stopping === p) this.#stopping = null
    }
    p.then(done, done)
    return p
  }

  async #stop(): Promise<void> {
    for (const g of this.#groups) killGroup(g)
    this.#groups.clear()
    const [priv, root] = [this.#private, this.#given === undefined ? this.#root : null]
    this.#private = null
    this.#root = null
    this.#state = null
    if (priv) await rm(priv, { recursive: true, force: true })
    if (root) await rm(root, { recursive: true, force: true })
  }

  /** Sets a variable for later commands. */
  setEnv(name: string, value: string): void {
    const s = this.state
    this.#state = { cwd: s.cwd, env: { ...s.env, [name]: value } }
  }

  /** Runs one action. Every failure inside the workspace comes back as an `ErrorObservation`. */
  async act(action: WorkspaceAction, options: WorkspaceActOptions = {}): Promise<WorkspaceObservation> {
    this.step += 1
    const step = this.step
    const stamped = Object.freeze({
      ...action,
      run_id: this.runId,
      step,
      ts: Date.now() / 1000,
      actor: this.actor,
    })
    const kind = String((action as { kind?: unknown } | null)?.kind)
    let body: ObservationBody
    const refuse = (message: string): ObservationBody => ({ kind: "error", message, action_kind: kind })
    try {
      // A stopped workspace stays stopped: a late call must not recreate a root that nobody would delete.
      if (this.#stopped) body = refuse("the workspace is stopped: start() it again to use it")
      // Before the gate: a host's gate that allows test runs but not `custom` (whose selector is a raw command) must
      // not see a framework that is neither.
      else if (stamped.kind === "test_run" && !isTestFramework(stamped.framework))
        body = refuse(`framework must be one of ${TEST_FRAMEWORKS.join(", ")}`)
      else {
        await this.start()
        const policy = policyName(stamped)
        const verdict = policy && this.#gate ? normalize(await this.#gate(policy, stamped)) : null
        body =
          verdict?.allowed === false
            ? refuse(`action denied by policy: ${verdict.reason}`)
            : await this.#dispatch(stamped, options.signal)
      }
    } catch (e) {
      body = {
        kind: "error",
        // Our own refusals say why; anything else stays generic so no host detail leaks to the agent.
        message: e instanceof WorkspacePathError ? e.message : "workspace action failed",
        action_kind: kind,
      }
    }
    return Object.freeze({
      ...body,
      run_id: this.runId,
      step,
      ts: Date.now() / 1000,
      actor: this.actor,
    }) as WorkspaceObservation
  }

  async #dispatch(a: WorkspaceAction, signal: AbortSignal | undefined): Promise<ObservationBody> {
    const root = this.root
    const t = (a as { timeout?: unknown }).timeout
    // setTimeout would fire at once for these; refused before anything runs, so the model can retry with a number.
    if ((a.kind === "cmd_run" || a.kind === "test_run") && !(typeof t === "number" && t > 0 && t < Infinity))
      return {
        kind: "error",
        message: `timeout must be a number of seconds > 0, got ${String(t)}`,
        action_kind: a.kind,
      }
    switch (a.kind) {
      case "cmd_run":
        return this.#cmd(a.command, a.cwd, a.timeout, "head", signal)
      case "file_read":
        return this.#oneFileAction(a.kind, signal, async () => {
          const content = await safeRead(root, pathComponents(a.path, root))
          if (a.start === null && a.end === null) return { kind: "file_content", path: a.path, content }
          const lines = content.split("\n")
          const from = Math.max(1, a.start ?? 1)
          const to = a.end ?? lines.length
          return { kind: "file_content", path: a.path, content: lines.slice(from - 1, to).join("\n") }
        })
      case "file_write":
        return this.#oneFileAction(a.kind, signal, async () => {
          const bytes = await safeWrite(root, pathComponents(a.path, root), a.content)
          return { kind: "file_write_ok", path: a.path, bytes_written: bytes }
        })
      case "file_edit":
        return this.#oneFileAction(a.kind, signal, () => this.#edit(a))
      case "test_run":
        return this.#test(a, signal)
      case "port_expose":
        return { kind: "port", port: a.port, url: `http://localhost:${a.port}` }
      case "browse":
        return { kind: "browser", url: a.url, error: "browser tier not provisioned: attach a browser driver" }
      case "computer_use":
        return { kind: "screen", error: "computer-use tier not provisioned: attach a computer-use driver" }
      case "agent_finish":
        return { kind: "null" }
      default:
        return {
          kind: "error",
          message: `unknown action kind '${String((a as { kind?: unknown }).kind)}'`,
          action_kind: String((a as { kind?: unknown }).kind),
        }
    }
  }

  /**
   * File actions run one at a time. Run at once (a batch of parallel tool calls), two edits of one file each read it
   * before the other wrote it back, so one was lost while both reported applied, and a read during a rewrite saw the
   * file truncated. One whose signal aborted while it waited does not run, as a cancelled command does not; nor does
   * one whose workspace stopped meanwhile: stop() does not wait for the queue, and a write after it landed in a root
   * the caller keeps.
   */
  #oneFileAction(
    kind: string,
    signal: AbortSignal | undefined,
    fn: () => Promise<ObservationBody>,
  ): Promise<ObservationBody> {
    const session = this.#private
    const run = this.#files.then((): Promise<ObservationBody> | ObservationBody => {
      const why = signal?.aborted
        ? "the action was cancelled before it ran"
        : this.#stopped || this.#private !== session
          ? "the workspace stopped before the action ran"
          : null
      return why === null ? fn() : { kind: "error", message: why, action_kind: kind }
    })
    this.#files = run.catch(() => {})
    return run
  }

  async #cmd(
    command: string,
    cwd: string | null,
    timeout: number,
    keep: "head" | "tail",
    signal: AbortSignal | undefined,
  ): Promise<Omit<CmdOutputObservation, "run_id" | "step" | "ts" | "actor">> {
    const state = this.state
    const session = this.#private
    // One marker per command: commands running at once (a batch of parallel cmd_run calls) each read back their
    // own cwd. A shared one was removed or rewritten by another command before it was read.
    const marker = join(session as string, `cwd-${++this.#commands}`)
    // Forget groups whose jobs have all ended: fewer stale ids for stop() to signal after the system reused them.
    for (const g of this.#groups) if (!killGroup(g, 0)) this.#groups.delete(g)
    const r = await runShell({
      command,
      cwd: this.root,
      startDir: cwd ?? state.cwd,
      markerFile: marker,
      env: state.env,
      timeoutSeconds: timeout,
      keep,
      groups: this.#groups,
      ...(signal ? { signal } : {}),
    })
    // The agent's shell writes the marker (a function named pwd can, or a background job), so only an absolute path
    // of one line that a later spawn can take becomes the cwd; anything else keeps the old one. Read whole, 300 KB
    // became the next script's argument, too long for a spawn: every later command failed.
    const text = await readSmall(marker, MAX_PATH_CHARS + 1)
    const after = /^(\/[^\0\n]*)\n?$/.exec(text ?? "")?.[1]
    // The command has run: a marker that cannot be removed must not report it as failed (the agent would run it again).
    await rm(marker, { force: true }).catch(() => {})
    // stop() may have run while the command finished. Writing the state back then would revive a stopped workspace
    // with no root, and start() would skip it.
    // The env as it is now: a setEnv() while the command ran stays.
    if (after && !this.#stopped && this.#private === session)
      this.#state = { cwd: after, env: this.state.env }
    const cut = (s: string) => (keep === "head" ? s.slice(0, MAX_STREAM_CHARS) : s)
    return {
      kind: "cmd_output",
      exit_code: r.exitCode,
      stdout: cut(r.stdout),
      stderr: cut(r.stderr),
      cwd: after || state.cwd,
    }
  }

  async #edit(a: FileEdit): Promise<ObservationBody> {
    const parts = pathComponents(a.path, this.root)
    const before = await safeRead(this.root, parts)
    if (a.old === "") return { kind: "error", message: "old string must not be empty", action_kind: a.kind }
    let count = 0
    for (let i = before.indexOf(a.old); i >= 0; i = before.indexOf(a.old, i + a.old.length)) count++
    if (count === 0) return { kind: "error", message: "old string not found", action_kind: a.kind }
    if (count > 1 && !a.replace_all)
      return { kind: "error", message: "old string is not unique; provide more context", action_kind: a.kind }
    // Before the result is built: 1 MiB of "a" with every "a" made 600 characters is a 629-million-character string
    // (past V8's limit it throws; just under it the host allocates gigabytes). Characters never outnumber UTF-8 bytes.
    if (before.length + count * (a.new.length - a.old.length) > MAX_FILE_BYTES)
      return {
        kind: "error",
        message: `the edited file would be larger than ${MAX_FILE_BYTES} bytes`,
        action_kind: a.kind,
      }
    const after = a.replace_all ? before.split(a.old).join(a.new) : before.replace(a.old, () => a.new)
    await safeWrite(this.root, parts, after)
    return {
      kind: "file_edit_ok",
      path: a.path,
      diff: unifiedDiff(a.path, before, after).slice(0, MAX_STREAM_CHARS),
      applied: true,
      replacements: a.replace_all ? count : 1,
    }
  }

  async #test(a: TestRun, signal: AbortSignal | undefined): Promise<ObservationBody> {
    const sel = a.selector ? ` ${a.selector.split(/\s+/).filter(Boolean).map(shellQuote).join(" ")}` : ""
    // An empty custom selector means `make test`, as in the original: running "" would report an empty, green run.
    const command =
      a.framework === "pytest"
        ? `python -m pytest${sel} -q --no-header -p no:cacheprovider`
        : a.framework === "vitest"
          ? `npx vitest run${sel}`
          : a.framework === "node"
            ? `node --test${sel}`
            : a.selector || "make test"
    const r = await this.#cmd(command, a.cwd, a.timeout, "tail", signal)
    const raw = `${r.stdout}\n${r.stderr}`.trim()
    const c = parseTestSummary(raw)
    return {
      kind: "test_result",
      ...c,
      exit_code: r.exit_code,
      report: `${c.passed} passed, ${c.failed} failed, ${c.errors} errors (exit ${r.exit_code})`,
      raw: raw.slice(-MAX_STREAM_CHARS),
    }
  }
}

function normalize(v: PolicyVerdict): { allowed: boolean; reason: string } {
  if (typeof v === "boolean") return { allowed: v, reason: v ? "" : "denied" }
  if (Array.isArray(v)) return { allowed: Boolean(v[0]), reason: String(v[1] ?? "denied") }
  const o = v as { allowed: boolean; reason?: string }
  return { allowed: Boolean(o.allowed), reason: o.reason ?? "denied" }
}

/** One-hunk unified diff: the changed middle with up to 3 lines of context. */
export function unifiedDiff(path: string, before: string, after: string): string {
  const a = before.split("\n")
  const b = after.split("\n")
  let pre = 0
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++
  let suf = 0
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf])
    suf++
  const ctx = 3
  const start = Math.max(0, pre - ctx)
  const aEnd = Math.min(a.length, a.length - suf + ctx)
  const bEnd = Math.min(b.length, b.length - suf + ctx)
  const lines = [
    `--- a/${path}`,
    `+++ b/${path}`,
    `@@ -${start + 1},${aEnd - start} +${start + 1},${bEnd - start} @@`,
  ]
  for (let i = start; i < pre; i++) lines.push(` ${a[i]}`)
  for (let i = pre; i < a.length - suf; i++) lines.push(`-${a[i]}`)
  for (let i = pre; i < b.length - suf; i++) lines.push(`+${b[i]}`)
  for (let i = a.length - suf; i < aEnd; i++) lines.push(` ${a[i]}`)
  return `${lines.join("\n")}\n`
}

/** A local workspace (Node, Deno, Bun). There is no container backend in this port; `root` pins the directory. */
export function createWorkspace(options: WorkspaceOptions = {}): DevWorkspace {
  return new DevWorkspace(options)
}

/** Runs `fn` with a started workspace and stops it afterwards, whatever happens. */
export async function withWorkspace<T>(
  options: WorkspaceOptions,
  fn: (ws: DevWorkspace) => Promise<T>,
): Promise<T> {
  const ws = createWorkspace(options)
  await ws.start()
  try {
    return await fn(ws)
  } finally {
    await ws.stop()
  }
}

export type { ErrorObservation }
