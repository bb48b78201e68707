// Plan validation: once, before anything runs, collecting every problem instead of stopping at the first.

import { clip, safeString } from "../repr.ts"
import { type PlanProblem, PlanValidationError } from "./errors.ts"
import { newPlanId } from "./ids.ts"
import type { DependencyPlan, RunPlan, RunTask, RunUsage } from "./types.ts"
import { readUsage, UsageAccumulator, usageProblems } from "./usage.ts"

export const MAX_TASK_ID_LENGTH = 128
export const MAX_CONCURRENCY_LIMIT = 64
export const DEFAULT_MAX_CONCURRENCY = 4

/** A validated task: `depends_on` filled in, indexes resolved. */
export interface CheckedTask {
  readonly task_id: string
  readonly prompt: string
  readonly depends_on: readonly string[]
  readonly index: number
  readonly deps: readonly number[]
  readonly dependents: readonly number[]
}

/** A plan that passed validation, in the shape the driver runs. */
export interface CheckedPlan {
  readonly plan_id: string
  readonly output_task_id: string
  readonly max_concurrency: number
  readonly tasks: readonly CheckedTask[]
  readonly initial_usage: RunUsage
  readonly initial_elapsed_seconds: number
}

/**
 * A hostile plan's value in a message: JSON when it has one, else its string form; never throws (bigint, cycles).
 * Clipped: a planner's 1 MB id, repeated in every problem that names it, made the joined message too long to build.
 */
function describe(v: unknown): string {
  try {
    return clip(JSON.stringify(v) ?? safeString(v))
  } catch {
    return clip(safeString(v))
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v)
}

/** Validates a `RunPlan` (or a bare `DependencyPlan`) and throws `PlanValidationError` listing every problem. */
export function validatePlan(input: RunPlan | DependencyPlan): CheckedPlan {
  const problems: PlanProblem[] = []
  const isRunPlan = isRecord(input) && "dependency_plan" in input
  const plan = (isRunPlan ? (input as RunPlan).dependency_plan : input) as DependencyPlan
  // Every field is read once, here: a getter or proxy that passed validation with one value must not run with
  // another (a task id that changed afterwards hung the run; a usage counter that did refunded the budget).
  const rawTasks = isRecord(plan) ? plan.tasks : undefined
  if (!Array.isArray(rawTasks)) {
    throw new PlanValidationError([{ code: "invalid_plan", message: "a plan needs a `tasks` array" }])
  }
  // Holes become undefined (an invalid task) instead of being skipped by forEach/map and crashing later.
  const tasks = Array.from(rawTasks, (t: unknown) =>
    isRecord(t) ? { task_id: t.task_id, prompt: t.prompt, depends_on: t.depends_on } : t,
  ) as RunTask[]
  if (tasks.length === 0) problems.push({ code: "empty_plan", message: "the plan has no tasks" })

  const indexOf = new Map<string, number>()
  tasks.forEach((t, i) => {
    const id = isRecord(t) ? t.task_id : undefined
    if (typeof id !== "string" || id.trim() === "" || id !== id.trim() || id.length > MAX_TASK_ID_LENGTH) {
      problems.push({
        code: "invalid_task_id",
        message: `task #${i} has an invalid task_id ${describe(id)} (non-empty, no surrounding whitespace, at most ${MAX_TASK_ID_LENGTH} chars)`,
      })
      return
    }
    if (indexOf.has(id)) {
      problems.push({
        code: "duplicate_task_id",
        task_id: id,
        message: `task id '${id}' appears more than once`,
      })
      return
    }
    indexOf.set(id, i)
    const prompt = (t as unknown as Record<string, unknown>).prompt
    if (typeof prompt !== "string" || prompt.trim() === "")
      problems.push({ code: "empty_prompt", task_id: id, message: `task ${id} has an empty prompt` })
  })

  const deps: number[][] = tasks.map(() => [])
  const dependsOn: string[][] = tasks.map(() => [])
  tasks.forEach((t, i) => {
    if (!isRecord(t)) return
    const id = typeof t.task_id === "string" ? t.task_id : describe(t.task_id)
    const shown = clip(id)
    const raw = t.depends_on ?? []
    if (!Array.isArray(raw)) {
      problems.push({
        code: "unknown_dependency",
        task_id: id,
        message: `task ${shown}: depends_on must be an array`,
      })
      return
    }
    const seen = new Set<string>()
    for (const d of raw as unknown[]) {
      // Not coerced: a dependency 1 must not resolve to the task "1".
      if (typeof d !== "string") {
        problems.push({
          code: "unknown_dependency",
          task_id: id,
          message: `task ${shown}: dependency ${describe(d)} is not a task id string`,
        })
        continue
      }
      const dep = d
      if (seen.has(dep)) {
        problems.push({
          code: "duplicate_dependency",
          task_id: id,
          message: `task ${shown} lists dependency ${clip(dep)} more than once`,
        })
        continue
      }
      seen.add(dep)
      if (dep === id) {
        problems.push({ code: "self_dependency", task_id: id, message: `task ${shown} depends on itself` })
        continue
      }
      const j = indexOf.get(dep)
      if (j === undefined) {
        problems.push({
          code: "unknown_dependency",
          task_id: id,
          message: `task ${shown} depends on unknown task ${clip(dep)}`,
        })
        continue
      }
      // A duplicated task id points at its first declaration; only the first declaration gets edges.
      if (indexOf.get(id) === i) {
        deps[i]!.push(j)
        dependsOn[i]!.push(dep)
      }
    }
  })

  const cycle = findCycle(tasks.length, deps)
  if (cycle) {
    const path = cycle.map((i) => String(tasks[i]!.task_id))
    problems.push({ code: "cycle", cycle: path, message: `dependency cycle: ${clip(path.join(" -> "))}` })
  }

  const dependents: number[][] = tasks.map(() => [])
  deps.forEach((ds, i) => {
    for (const j of ds) dependents[j]!.push(i)
  })
  const out = plan.output_task_id
  const outIndex = typeof out === "string" ? indexOf.get(out) : undefined
  if (outIndex === undefined) {
    problems.push({
      code: "unknown_output_task",
      message: `output_task_id ${describe(out)} does not name a task in the plan`,
    })
  } else {
    const sinks = [...indexOf.values()]
      .filter((i) => dependents[i]!.length === 0)
      .map((i) => tasks[i]!.task_id)
    if (dependents[outIndex]!.length > 0 || sinks.length !== 1)
      problems.push({
        code: "output_not_sole_sink",
        sinks,
        message: `output task ${clip(String(out))} must be the plan's only sink (no task depends on it, every other task leads to it); sinks: ${clip(sinks.join(", "))}`,
      })
  }

  const mc = plan.max_concurrency ?? DEFAULT_MAX_CONCURRENCY
  if (typeof mc !== "number" || !Number.isInteger(mc) || mc < 1 || mc > MAX_CONCURRENCY_LIMIT)
    problems.push({
      code: "invalid_max_concurrency",
      message: `max_concurrency must be an integer from 1 to ${MAX_CONCURRENCY_LIMIT}, got ${describe(mc)}`,
    })

  const initialUsage = readUsage(isRunPlan ? (input as RunPlan).initial_usage : undefined)
  for (const m of usageProblems(initialUsage)) problems.push({ code: "invalid_initial_usage", message: m })
  const elapsed = isRunPlan ? ((input as RunPlan).initial_elapsed_seconds ?? 0) : 0
  if (typeof elapsed !== "number" || !Number.isFinite(elapsed) || elapsed < 0)
    problems.push({
      code: "invalid_initial_elapsed",
      message: `initial_elapsed_seconds must be a finite number >= 0, got ${describe(elapsed)}`,
    })

  const planId = plan.plan_id
  if (planId !== undefined && (typeof planId !== "string" || planId === ""))
    problems.push({ code: "invalid_plan", message: "plan_id must be a non-empty string when given" })

  if (problems.length > 0) throw new PlanValidationError(problems)

  const acc = new UsageAccumulator()
  acc.add(initialUsage as Partial<RunUsage> | undefined)
  return {
    plan_id: planId ?? newPlanId(),
    output_task_id: out,
    max_concurrency: Math.min(mc, tasks.length),
    initial_usage: acc.snapshot(),
    initial_elapsed_seconds: elapsed,
    tasks: tasks.map((t, i) => ({
      task_id: t.task_id,
      prompt: t.prompt,
      depends_on: Object.freeze([...dependsOn[i]!]),
      index: i,
      deps: deps[i]!,
      dependents: dependents[i]!,
    })),
  }
}

/** White/grey/black DFS that skips dangling edges; returns a closed path such as [a, b, a]. */
function findCycle(n: number, deps: readonly (readonly number[])[]): number[] | null {
  const color = new Uint8Array(n) // 0 white, 1 grey, 2 black
  const stack: number[] = []
  for (let start = 0; start < n; start++) {
    if (color[start] !== 0) continue
    // Iterative so a 10,000-task chain cannot overflow the call stack.
    const iters: number[] = [0]
    stack.push(start)
    color[start] = 1
    while (stack.length > 0) {
      const top = stack.length - 1
      const node = stack[top]!
      const edges = deps[node]!
      const k = iters[top]!
      if (k < edges.length) {
        iters[top] = k + 1
        const next = edges[k]!
        if (color[next] === 1) {
          const from = stack.indexOf(next)
          // deps point backwards (task -> its prerequisite); report in dependency-reading order.
          return [...stack.slice(from), next]
        }
        if (color[next] === 0) {
          color[next] = 1
          stack.push(next)
          iters.push(0)
        }
      } else {
        color[node] = 2
        stack.pop()
        iters.pop()
      }
    }
  }
  return null
}
