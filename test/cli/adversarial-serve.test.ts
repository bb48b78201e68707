// `mycelium serve` attacked over raw sockets, as a hostile local process or web page would: the token must not leak,
// and framing tricks (chunked bodies past the limit, CL+TE, odd Host values) end in a JSON 4xx, never a hang.
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { mkdtempSync, rmSync } from "node:fs"
import { request } from "node:http"
import { type AddressInfo, connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { serve } from "../../src/cli/http-bridge.ts"
import { cliCommand } from "./cli-bin.ts"

const TOKEN = "adversarial-serve-token-6f1e"
let child: ChildProcess
let banner = ""
let port = 0
let dir = ""

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mycelium-adv-serve-"))
  const ledger = join(dir, "ledger.json")
  const [cmd, pre] = cliCommand()
  child = spawn(cmd, [...pre, "serve", "--port", "0", "--ledger", ledger], {
    env: { ...process.env, MYCELIUM_TOKEN: TOKEN, NO_COLOR: "1" },
  })
  port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no API after 30 s:\n${banner}`)), 30_000)
    const on = (d: unknown) => {
      banner += String(d)
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)[\s\S]*transitions\?stuck=true/.exec(banner)
      if (m?.[1]) {
        clearTimeout(timer)
        resolve(Number(m[1]))
      }
    }
    child.stdout?.on("data", on)
    child.stderr?.on("data", on)
    child.once("exit", (code) => reject(new Error(`serve exited ${code}:\n${banner}`)))
  })
}, 40_000)
afterAll(async () => {
  child?.kill("SIGTERM")
  // The server writes its ledger until it exits.
  if (child && child.exitCode === null && child.signalCode === null) await once(child, "exit")
  if (dir) rmSync(dir, { recursive: true, force: true })
})

/** One raw HTTP/1.1 exchange; the status line and the body of the answer. */
function raw(text: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const s = connect(port, "127.0.0.1")
    let got = ""
    s.on("data", (d) => {
      got += String(d)
    })
    s.on("error", (e) => {
      if ((e as NodeJS.ErrnoException).code !== "ECONNRESET" && (e as NodeJS.ErrnoException).code !== "EPIPE")
        reject(e)
    })
    s.on("close", () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0)
      resolve({ status, body: got.slice(got.indexOf("\r\n\r\n") + 4) })
    })
    s.write(text)
  })
}

const head = (method: string, path: string, extra = "") =>
  `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TOKEN}\r\nConnection: close\r\n${extra}`

describe("mycelium serve against a hostile local caller", () => {
  it("never prints the bearer token (the banner lands in terminals, CI logs and journals)", () => {
    expect(banner).toContain("authorization: Bearer $MYCELIUM_TOKEN")
    expect(banner).not.toContain(TOKEN)
  })

  it("a chunked body past the limit is 413 JSON; CL+TE together and a negative length are 400", async () => {
    const big = "x".repeat(2 * 1024 * 1024)
    const chunked = await raw(
      `${head("POST", "/v1/calls", "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n")}\r\n` +
        `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`,
    )
    expect(chunked.status).toBe(413)
    expect(chunked.body).toContain('"payload_too_large"')
    const smuggle = await raw(
      `${head("POST", "/v1/calls", "Content-Type: application/json\r\nContent-Length: 12\r\nTransfer-Encoding: chunked\r\n")}\r\n0\r\n\r\n`,
    )
    expect(smuggle.status).toBe(400)
    const negative = await raw(
      `${head("POST", "/v1/calls", "Content-Type: application/json\r\nContent-Length: -1\r\n")}\r\n{}`,
    )
    expect(negative.status).toBe(400)
  })

  it("Host values that only look local are refused; a wrong token is not echoed back", async () => {
    for (const host of ["127.1", "localhost.", "127.0.0.1.nip.io", `evil.com:${port}`]) {
      const r = await raw(`GET /v1/transitions HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
      expect([host, r.status]).toEqual([host, 403])
      expect(r.body).toContain('"forbidden_host"')
    }
    const wrong = await raw(
      `GET /v1/transitions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer guess-SEKRIT\r\nConnection: close\r\n\r\n`,
    )
    expect(wrong.status).toBe(401)
    expect(wrong.body).not.toContain("SEKRIT")
    const ok = await raw(`${head("GET", "/v1/transitions")}\r\n`)
    expect(ok.status).toBe(200)
  })

  it("TRACE (which fetch's Request refuses) and PROPFIND are 405 JSON; CONNECT is no 500", async () => {
    for (const method of ["TRACE", "PROPFIND"])
      for (const type of ["Content-Type: application/json\r\n", ""]) {
        const r = await raw(`${head(method, "/v1/transitions", type)}\r\n`)
        expect([method, type, r.status]).toEqual([method, type, 405])
        expect(r.body).toContain('"method_not_allowed"')
      }
    const connect = await raw(`${head("CONNECT", `127.0.0.1:${port}`)}\r\n`)
    expect(connect.status).not.toBe(500)
  })

  it("PATCH and DELETE, which no route takes, are 405 naming the methods it does take; OPTIONS is not told to send JSON", async () => {
    for (const method of ["PATCH", "DELETE"]) {
      const r = await raw(`${head(method, "/v1/transitions", "Content-Type: application/json\r\n")}\r\n`)
      expect([method, r.status]).toEqual([method, 405])
      expect(r.body).toContain("GET, POST and PUT")
    }
    const options = await raw(`${head("OPTIONS", "/v1/transitions")}\r\n`)
    expect(options.status).not.toBe(415)
    expect(options.status).toBeLessThan(500)
  })

  it("a request target that is not a path is 400 invalid_path, not a 500", async () => {
    for (const target of ["http://[/v1/transitions", "http://evil.com/v1/transitions", "*"]) {
      const r = await raw(`${head("GET", target)}\r\n`)
      expect([target, r.status]).toEqual([target, 400])
      expect(r.body).toContain('"invalid_path"')
    }
  })
})

describe("the local bridge's request timeout", () => {
  it("closes a connection whose body trickles in past requestTimeout, and keeps serving others", async () => {
    const server = await serve(async () => Response.json({ ok: true }), 0, { requestTimeout: 1 })
    const at = (server.address() as AddressInfo).port
    try {
      const started = Date.now()
      const answer = await new Promise<string>((resolve) => {
        const s = connect(at, "127.0.0.1")
        let got = ""
        s.on("data", (d) => {
          got += String(d)
        })
        s.on("error", () => {})
        s.on("close", () => resolve(got))
        // Declares 100 bytes, sends 1: Node's default (300 s) kept this open for five minutes.
        s.write(
          `POST /x HTTP/1.1\r\nHost: 127.0.0.1:${at}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
        )
      })
      const waited = Date.now() - started
      expect(waited).toBeGreaterThanOrEqual(900)
      expect(waited).toBeLessThan(10_000)
      expect(answer).toMatch(/^(HTTP\/1\.1 408|$)/)
      const ok = await fetch(`http://127.0.0.1:${at}/health`)
      expect(ok.status).toBe(200)
    } finally {
      server.close()
    }
  })
})

describe("the local bridge's body limit", () => {
  it("answers 413 to a chunked body past the limit while it is still arriving; the app never sees it", async () => {
    // The app answers 200: a 413 here can only be the bridge's (serve's own app also says 413, after buffering).
    let handled = -1
    const max = 16 * 1024
    const server = await serve(
      async (req) => {
        handled = (await req.arrayBuffer()).byteLength
        return Response.json({ ok: true })
      },
      0,
      { maxBodyBytes: max },
    )
    const at = (server.address() as AddressInfo).port
    try {
      const chunk = Buffer.alloc(max, 0x20)
      const cap = 256 * max
      let sent = 0
      const answer = await new Promise<{ status: number; body: string; ended: boolean; sent: number }>(
        (resolve, reject) => {
          let answered = false
          const r = request(
            {
              host: "127.0.0.1",
              port: at,
              method: "POST",
              path: "/v1/calls",
              headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
            },
            (res) => {
              answered = true
              const ended = r.writableEnded
              const before = sent
              let body = ""
              res.on("data", (d) => {
                body += String(d)
              })
              res.on("end", () => {
                r.destroy()
                resolve({ status: res.statusCode ?? 0, body, ended, sent: before })
              })
            },
          )
          r.on("error", (e) => {
            if (!answered) reject(e)
          })
          // One chunk a turn until answered: the bridge must answer after about max bytes, long before the cap.
          const pump = () => {
            if (answered) return
            if (sent >= cap) return void r.end()
            sent += chunk.length
            r.write(chunk, () => setImmediate(pump))
          }
          pump()
        },
      )
      expect(answer.status).toBe(413)
      expect(answer.body).toContain('"payload_too_large"')
      expect(answer.ended).toBe(false)
      // About max bytes in (3 chunks when measured), not the 256 the client would have gone on to send.
      expect(answer.sent).toBeLessThan(32 * max)
      expect(handled).toBe(-1)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })
})
