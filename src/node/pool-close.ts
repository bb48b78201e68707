// close() for the node-postgres and Neon pools a config opens, bounded. pg-pool's end() waits for each client's own
// end, and a client whose server stopped answering ends only with its socket: a Neon WebSocket (the `ws` package)
// waits 30 s for a close frame that a stalled proxy never passes. That held close(), and a process with nothing left
// to do (the CLI after an outage), for 30 s.

/** The parts of a pg or Neon client close() reaches: its socket, a net.Socket or Neon's shim over a WebSocket. */
interface PoolClientSocket {
  readonly connection?: {
    readonly stream?: { destroy?(): unknown; readonly ws?: { terminate?(): unknown } | null }
  }
}

/** What close() needs of a pool: pg-pool's end() and its connect and remove events (`pg.Pool`, Neon's `Pool`). */
export interface EndablePool {
  end(): Promise<void>
  // Loose on purpose: pg's typings overload on() by event, and TypeScript matches an overload set by its first.
  on(event: string, listener: (client: unknown) => void): unknown
}

/** How long close() gives the pool's own end at most: one round trip per client, on a healthy server. */
const GRACE_MS = 2000
/** Then how long it waits for the dropped sockets to close before it returns anyway. */
const DROP_MS = 1000

/** True once `p` resolved, false if `ms` passed first; rejects with `p`. */
function settlesWithin(p: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(false), ms)
    p.then(
      () => {
        clearTimeout(timer)
        resolve(true)
      },
      (e: unknown) => {
        clearTimeout(timer)
        reject(e)
      },
    )
  })
}

/**
 * A close() for `pool`: its end(), and the end of every client it removed before (one whose query failed or timed
 * out), given the store's `timeout` (at most 2 s) to finish, after which the sockets still open are dropped. Call it
 * when the pool is made, so it sees every client connect.
 *
 * A statement still running then is cut off, and its call fails closed as in any outage, as when it times out.
 */
export function poolCloser(pool: EndablePool, timeoutMs: number | undefined): () => Promise<void> {
  // Clients connected and not yet ended. pg-pool emits `remove` once a client's end() is over, and its own end()
  // does not wait for a client it removed earlier: after a failed query, that client's socket may still be closing.
  const clients = new Set<unknown>()
  let allGone: (() => void) | undefined
  pool.on("connect", (client) => clients.add(client))
  pool.on("remove", (client) => {
    clients.delete(client)
    if (clients.size === 0) allGone?.()
  })
  return async () => {
    const gone = clients.size ? new Promise<void>((resolve) => (allGone = resolve)) : undefined
    const ended = Promise.all([pool.end(), gone]).then(() => {})
    if (await settlesWithin(ended, Math.min(timeoutMs ?? GRACE_MS, GRACE_MS))) return
    for (const client of clients) {
      const stream = (client as PoolClientSocket).connection?.stream
      // ws's terminate() closes the TCP socket at once. A WebSocket without it (Node's global one, Deno's, Bun's)
      // gets destroy(), which on Neon's socket is a close() that waits for the server's answer as before.
      if (stream?.ws?.terminate) stream.ws.terminate()
      else stream?.destroy?.()
    }
    await settlesWithin(ended, DROP_MS)
  }
}
