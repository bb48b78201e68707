// The tool-boundary tests' readings of a bounded call: what reached the tool, or the violation that refused it.
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

/** The ToolBoundaryError a bounded call was refused with (a call that resolves fails the test). */
export async function failure(p: Promise<unknown>): Promise<ToolBoundaryError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  )
  expect(e).toBeInstanceOf(ToolBoundaryError)
  return e as ToolBoundaryError
}
