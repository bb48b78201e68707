// The tool-boundary tests' one reading of a bounded call: what reached the tool, or the violation that refused it.
import { expect } from "vitest"
import { ToolBoundaryError } from "../../../src/core/tools/index.ts"

export async function outcome(p: Promise<unknown>): Promise<{ ok: unknown } | { violation: string }> {
  return p.then(
    (ok) => ({ ok }),
    (e: unknown) => {
      expect(e).toBeInstanceOf(ToolBoundaryError)
      return { violation: (e as ToolBoundaryError).violation }
    },
  )
}
