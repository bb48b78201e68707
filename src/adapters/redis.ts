// Ledger on a plain Redis server (redis:// or rediss://) for Node, Deno and Bun: the Upstash adapter's layout and
// Lua scripts over a small RESP2 connection, so a Python worker on the same Redis shares the ledger and both
// adapters stay one implementation. Commands are pipelined on one socket; a broken socket fails every pending
// command (the ledger turns that into LedgerStorageUnavailableError) and the next command reconnects, unless close()
// ended the connection for good.
import { createHash } from "node:crypto"
import { connect as netConnect, type Socket } from "node:net"
import { connect as tlsConnect } from "node:tls"
import { InvalidOptionError, MyceliumError } from "../core/errors.ts"
import {
  type DispatchLookup,
  type UpstashClient,
  UpstashLedgerStorage,
  type UpstashLedgerStorageOptions,
} from "./upstash.ts"

/** Options for {@link RedisLedgerStorage}. */
export interface RedisLedgerStorageOptions {
  /** `redis://[user:password@]host[:port][/db]` or `rediss://...` for TLS. */
  readonly url: string
  /** Row key prefix, the original's default `mycelium:action:`. */
  readonly prefix?: string
  /** Seconds an in-flight row's key lives after its last write (default 7 days; 0 disables). */
  readonly inFlightTtl?: number
  /** Milliseconds to wait for the connection and for each reply. Default 5000. */
  readonly timeoutMs?: number
  /** `scan` when Python workers share this Redis; see {@link UpstashLedgerStorageOptions.dispatchLookup}. */
  readonly dispatchLookup?: DispatchLookup
}

/** A Redis reply or a server error; errors reject the command's promise. */
export type Reply = string | number | null | Reply[]

/** The server answered with an error reply (`-ERR ...`). */
export class RedisReplyError extends MyceliumError {
  override readonly name = "RedisReplyError"
  override readonly code = "redis_reply_error"
}

/** The connection could not be opened, broke, or a reply did not arrive in time. */
export class RedisConnectionError extends MyceliumError {
  override readonly name = "RedisConnectionError"
  override readonly code = "redis_connection_error"
}

interface Pending {
  resolve(value: Reply): void
  reject(error: Error): void
}

/** Parses one RESP2 value at `at`; returns null when the buffer does not hold all of it yet. */
function parse(buf: Buffer, at: number): { value: Reply | Error; next: number } | null {
  if (at >= buf.length) return null
  const eol = buf.indexOf("\r\n", at)
  if (eol < 0) return null
  const type = buf[at]
  const line = buf.toString("utf8", at + 1, eol)
  switch (type) {
    case 43: // +
      return { value: line, next: eol + 2 }
    case 45: // -
      return { value: new RedisReplyError(line), next: eol + 2 }
    case 58: // :
      return { value: Number(line), next: eol + 2 }
    case 36: {
      // $
      const len = Number(line)
      if (len < 0) return { value: null, next: eol + 2 }
      if (buf.length < eol + 2 + len + 2) return null
      return { value: buf.toString("utf8", eol + 2, eol + 2 + len), next: eol + 2 + len + 2 }
    }
    case 42: {
      // *
      const n = Number(line)
      if (n < 0) return { value: null, next: eol + 2 }
      const items: Reply[] = []
      let next = eol + 2
      for (let i = 0; i < n; i++) {
        const item = parse(buf, next)
        if (!item) return null
        // An error inside an array (e.g. from a script) is kept as its message; the script's caller checks shapes.
        items.push(item.value instanceof Error ? item.value.message : item.value)
        next = item.next
      }
      return { value: items, next }
    }
    default:
      return { value: new RedisConnectionError(`unexpected RESP type byte ${type}`), next: buf.length }
  }
}

const encode = (args: readonly (string | number)[]): string => {
  let out = `*${args.length}\r\n`
  for (const a of args) {
    const s = String(a)
    out += `$${Buffer.byteLength(s)}\r\n${s}\r\n`
  }
  return out
}

/** One pipelined RESP2 connection, reconnected on demand. Exactly the commands the ledger scripts need. */
export class RespConnection {
  readonly #url: URL
  readonly #timeoutMs: number
  #socket: Promise<Socket> | null = null
  #closed = false
  #pending: Pending[] = []
  #buffer: Buffer = Buffer.alloc(0)

  constructor(url: string, timeoutMs = 5000) {
    this.#url = new URL(url)
    if (this.#url.protocol !== "redis:" && this.#url.protocol !== "rediss:")
      throw new RedisConnectionError(`not a redis:// or rediss:// URL: ${this.#url.protocol}`)
    // Checked here: 0, -1, NaN, Infinity or past what a timer holds (32-bit milliseconds) failed every command.
    if (typeof timeoutMs !== "number" || !(timeoutMs > 0 && timeoutMs <= 86_400_000))
      throw new InvalidOptionError(
        `timeoutMs must be milliseconds > 0 and <= 86400000 (a day), got ${String(timeoutMs)}: pass e.g. 5000, or omit it`,
      )
    this.#timeoutMs = timeoutMs
  }

  command(...args: (string | number)[]): Promise<Reply> {
    // Closed for good: a reconnect after close() would hold a socket nobody closes, so the process never exits.
    if (this.#closed)
      return Promise.reject(new RedisConnectionError("the connection was closed (close()): open a new store"))
    return this.#open().then((socket) => {
      if (this.#closed) throw new RedisConnectionError("the connection was closed (close()) while it opened")
      return new Promise<Reply>((resolve, reject) => {
        const timer = setTimeout(
          () => this.#fail(new RedisConnectionError("Redis reply timed out")),
          this.#timeoutMs,
        )
        this.#pending.push({
          resolve: (v) => {
            clearTimeout(timer)
            resolve(v)
          },
          reject: (e) => {
            clearTimeout(timer)
            reject(e)
          },
        })
        socket.write(encode(args))
      })
    })
  }

  /** Ends the socket and fails what is pending; later commands fail too (no reconnect). */
  close(): void {
    this.#closed = true
    this.#fail(new RedisConnectionError("the connection was closed (close()) before Redis answered"))
  }

  #open(): Promise<Socket> {
    if (this.#socket) return this.#socket
    // A socket ends after it was replaced (its close event comes late): failing then would kill its successor.
    const failIfCurrent = (error: Error) => {
      if (this.#socket === opened) this.#fail(error)
    }
    // One deadline for connecting and the AUTH/SELECT set-up: no command's reply timer runs before both are done,
    // so a server that accepts and never answers would otherwise hold every call forever.
    let timer: ReturnType<typeof setTimeout> | undefined
    const opened: Promise<Socket> = new Promise<Socket>((resolve, reject) => {
      const u = this.#url
      const port = Number(u.port || 6379)
      const host = u.hostname.replace(/^\[|\]$/g, "")
      const socket =
        u.protocol === "rediss:" ? tlsConnect({ host, port, servername: host }) : netConnect({ host, port })
      socket.setNoDelay(true)
      timer = setTimeout(
        () =>
          socket.destroy(new RedisConnectionError("Redis did not connect and answer AUTH/SELECT in time")),
        this.#timeoutMs,
      )
      socket.once(u.protocol === "rediss:" ? "secureConnect" : "connect", () => resolve(socket))
      socket.on("data", (chunk: Buffer) => this.#onData(chunk))
      socket.on("error", (e) => {
        clearTimeout(timer)
        reject(new RedisConnectionError(`Redis at ${host}:${port}: ${e.message}`))
        failIfCurrent(new RedisConnectionError(`Redis at ${host}:${port}: ${e.message}`))
      })
      socket.on("close", () =>
        failIfCurrent(new RedisConnectionError(`Redis at ${host}:${port} closed the connection`)),
      )
    }).then(async (socket) => {
      // AUTH and SELECT go first on the socket, so every later command runs authenticated on the right db.
      const user = decodeURIComponent(this.#url.username)
      const pass = decodeURIComponent(this.#url.password)
      const db = this.#url.pathname.replace(/^\//, "")
      const setup: (string | number)[][] = []
      if (pass) setup.push(user ? ["AUTH", user, pass] : ["AUTH", pass])
      if (db && db !== "0") setup.push(["SELECT", db])
      try {
        for (const cmd of setup) {
          await new Promise<Reply>((resolve, reject) => {
            this.#pending.push({ resolve, reject })
            socket.write(encode(cmd))
          })
        }
      } catch (e) {
        // Failed or closed mid set-up: the socket never becomes the connection, so nothing else would end it.
        socket.destroy()
        throw e
      } finally {
        clearTimeout(timer)
      }
      return socket
    })
    this.#socket = opened
    return opened
  }

  #onData(chunk: Buffer): void {
    this.#buffer = this.#buffer.length ? Buffer.concat([this.#buffer, chunk]) : chunk
    let at = 0
    for (;;) {
      const r = parse(this.#buffer, at)
      if (!r) break
      at = r.next
      const p = this.#pending.shift()
      if (r.value instanceof Error) p?.reject(r.value)
      else p?.resolve(r.value)
    }
    this.#buffer = at >= this.#buffer.length ? Buffer.alloc(0) : this.#buffer.subarray(at)
  }

  #fail(error: Error): void {
    const pending = this.#pending
    this.#pending = []
    this.#buffer = Buffer.alloc(0)
    const s = this.#socket
    this.#socket = null
    void s?.then((socket) => socket.destroy()).catch(() => {})
    for (const p of pending) p.reject(error)
  }
}

/**
 * The calls UpstashLedgerStorage and UpstashTaskStore make (`createScript().exec`, `scan`), answered over
 * RESP instead of REST, so both Upstash adapters run on a plain Redis server unchanged.
 */
export function upstashShape(conn: RespConnection): UpstashClient {
  const shape = {
    createScript(src: string) {
      const sha = createHash("sha1").update(src).digest("hex")
      return {
        async exec(keys: string[], args: string[]): Promise<Reply> {
          try {
            return await conn.command("EVALSHA", sha, keys.length, ...keys, ...args)
          } catch (e) {
            if (!(e instanceof RedisReplyError) || !e.message.startsWith("NOSCRIPT")) throw e
            return conn.command("EVAL", src, keys.length, ...keys, ...args)
          }
        },
      }
    },
    scan: async (cursor: string | number, opts: { match: string; count: number }) =>
      conn.command("SCAN", cursor, "MATCH", opts.match, "COUNT", opts.count),
  }
  return shape
}

/**
 * The ledger on a Redis server over TCP (Node, Deno, Bun). Same keys, rows and scripts as `UpstashLedgerStorage`
 * and the Python original's RedisLedgerStorage.
 */
export class RedisLedgerStorage extends UpstashLedgerStorage {
  readonly connection: RespConnection

  constructor(options: RedisLedgerStorageOptions) {
    const connection = new RespConnection(options.url, options.timeoutMs)
    super({
      redis: upstashShape(connection),
      ...(options.prefix !== undefined && { prefix: options.prefix }),
      ...(options.inFlightTtl !== undefined && { inFlightTtl: options.inFlightTtl }),
      ...(options.dispatchLookup !== undefined && { dispatchLookup: options.dispatchLookup }),
    })
    this.connection = connection
  }

  /** Closes the socket for good: later calls fail closed (LedgerStorageUnavailableError), they do not reconnect. */
  async close(): Promise<void> {
    this.connection.close()
  }
}
