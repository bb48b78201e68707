// workerd reports a promise that is already rejected when a then() callback or an async function hands it back (the
// promise it resolves with gains its handler a microtask later) as uncaught: an `unhandledrejection`, logged as an
// error, handled or not. Node, Deno and Bun do not, so only the workers project can catch one.

/** The reasons workerd reported as uncaught while `act` ran (and a moment after). */
export async function uncaught(act: () => Promise<void>): Promise<string[]> {
  const seen: string[] = []
  const on = (e: Event) => {
    seen.push(String((e as PromiseRejectionEvent).reason))
    e.preventDefault()
  }
  addEventListener("unhandledrejection", on)
  try {
    await act()
    await new Promise((r) => setTimeout(r, 20))
  } finally {
    removeEventListener("unhandledrejection", on)
  }
  return seen
}
