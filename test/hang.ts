/**
 * For a child script that waits to be killed: never settles, and holds the process open until the parent's SIGKILL.
 * A bare `new Promise(() => {})` holds nothing, so on a store without open sockets Node finds its event loop empty
 * and exits 13 (an unsettled top-level await) on its own, sometimes before the parent's kill lands.
 */
export function hang(): Promise<never> {
  return new Promise<never>(() => {
    setInterval(() => {}, 1_000_000)
  })
}
