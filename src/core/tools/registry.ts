import { InvalidOptionError } from "../errors.ts"
import { SchemaBuildError, shownName, ToolBoundaryError } from "./errors.ts"

/** Any tool the registry can hold: a function with a `toolName` (bounded/protected) or a named function. */
export type RegisteredTool = ((args: never) => unknown) & { readonly toolName?: string }

/** Options for {@link ToolRegistry}. */
export interface ToolRegistryOptions {
  /** Names allowed before any tool is registered. Not a string: that is an iterable of its letters. */
  allowed?: readonly string[] | ReadonlySet<string>
}

export function toolNameOf(tool: RegisteredTool): string {
  return tool.toolName ?? tool.name
}

/** The allowlist of tools an agent may call. An empty registry blocks everything. */
export class ToolRegistry {
  readonly #allowed = new Set<string>()
  readonly #tools = new Map<string, RegisteredTool>()

  constructor(options: ToolRegistryOptions = {}) {
    if (typeof options.allowed === "string") {
      throw new SchemaBuildError("allowed must be a list.")
    }
    for (const name of options.allowed ?? []) this.#allowed.add(name)
  }

  /** Allows a tool by name (its implementation may be registered later or live elsewhere). */
  allow(name: string): this {
    this.#allowed.add(name)
    return this
  }

  /** Allows `tool` under its name and keeps it so ToolRunner can dispatch the model's choice to it. */
  register<T extends RegisteredTool>(tool: T, name: string = toolNameOf(tool)): T {
    if (!name) throw new InvalidOptionError("register() needs a named function or an explicit name.")
    this.#allowed.add(name)
    this.#tools.set(name, tool)
    return tool
  }

  get allowedTools(): readonly string[] {
    return [...this.#allowed].sort()
  }

  isAllowed(name: string): boolean {
    return this.#allowed.has(name)
  }

  /** The registered implementation of an allowed tool, if any. */
  get(name: string): RegisteredTool | undefined {
    return this.#allowed.has(name) ? this.#tools.get(name) : undefined
  }

  /** Throws a ToolBoundaryError (`not_in_allowlist`) unless `name` is allowed. */
  validateCall(name: string): void {
    if (this.#allowed.has(name)) return
    const list = this.allowedTools
    const recoveryHint =
      list.length > 0
        ? `Use one of the allowed tools: ${list.join(", ")}.`
        : "Register allowed tools on ToolRegistry before dispatch."
    // The name is the model's: shown clipped, like every value it wrote (see boundaryError).
    const shown = shownName(name)
    throw new ToolBoundaryError(`${shown}: not_in_allowlist`, {
      violation: "not_in_allowlist",
      toolName: name,
      stage: "allowlist",
      recoveryHint,
      llmMessage: `Tool '${shown}' is not available for this agent. Allowed tools: ${
        list.length > 0 ? list.join(", ") : "(none configured)"
      }. ${recoveryHint}`,
    })
  }
}
