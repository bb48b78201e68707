// `mycelium serve` as a subprocess, probed over raw HTTP the way a hostile web page or a DNS-rebinding attack would.
import type { ChildProcess } from "node:child_process"
import { once } from "node:events"
import { mkdtempSync, rmSync } from "node:fs"
import { request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { serveOnFreePort } from "./cli-bin.ts"

const children: ChildProcess[] = []
const dirs: string[] = []
afterAll(async () => {
  for (const c of children) c.kill("SIGTERM")
  // A server writes its ledger until it exits.
  await Promise.all(children.map((c) => c.exitCode ?? c.signalCode ?? once(c, "exit")))
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const start = (extra: string[] = []): Promise<number> => {
  const dir = mkdtempSync(join(tmpdir(), "mycelium-serve-"))
  dirs.push(dir)
  return serveOnFreePort(children, ["--ledger", join(dir, "ledger.json"), ...extra])
}

function http(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string | Buffer,
): Promise<{ status: number; json: { error?: { code: string } } & Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, headers }, (res) => {
      let text = ""
      res.on("data", (d) => {
        text += String(d)
      })
      res.on("end", () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text || "{}") }))
    })
    // A reset before the answer arrived is a failure (the server lingers so a client still sending reads its 413),
    // reported at once rather than as a test timeout.
    req.on("error", reject)
    if (body !== undefined) req.write(body)
    req.end()
  })
}

const release = JSON.stringify({ verified: "not_executed", reason: "r" })

describe("mycelium serve (local, no auth)", () => {
  it("answers only loopback Host values, refuses cross-origin and non-JSON writes, and limits bodies", async () => {
    const port = await start()
    const ok = await http(port, "GET", "/v1/transitions", { host: `127.0.0.1:${port}` })
    expect(ok.status).toBe(200)
    for (const host of [`localhost:${port}`, `[::1]:${port}`, "localhost"])
      expect((await http(port, "GET", "/v1/transitions", { host })).status, host).toBe(200)
    for (const host of [
      "evil.example",
      `evil.example:${port}`,
      `127.0.0.1.nip.io:${port}`,
      `localhost:${port + 1}`,
    ]) {
      const r = await http(port, "GET", "/v1/transitions", { host })
      expect([host, r.status, r.json.error?.code]).toEqual([host, 403, "forbidden_host"])
    }
    const json = { host: `127.0.0.1:${port}`, "content-type": "application/json" }
    const evil = await http(
      port,
      "POST",
      "/v1/transitions/x/release",
      { ...json, origin: "https://evil.example" },
      release,
    )
    expect([evil.status, evil.json.error?.code]).toEqual([403, "forbidden_origin"])
    const plain = await http(
      port,
      "POST",
      "/v1/transitions/x/release",
      { host: json.host, "content-type": "text/plain" },
      release,
    )
    expect([plain.status, plain.json.error?.code]).toEqual([415, "unsupported_media_type"])
    const same = await http(
      port,
      "POST",
      "/v1/transitions/x/release",
      { ...json, origin: `http://localhost:${port}` },
      release,
    )
    expect(same.status).toBe(404) // reached the API: no such transition
    const big = await http(port, "POST", "/v1/transitions/x/release", json, Buffer.alloc(5 * 1024 * 1024, 32))
    expect([big.status, big.json.error?.code]).toEqual([413, "payload_too_large"])
    // Still serving after the refused upload.
    expect((await http(port, "GET", "/health", { host: json.host })).status).toBe(200)
  }, 60_000)

  it("--token requires the bearer token on every /v1 route", async () => {
    const port = await start(["--token", "local-secret-token"])
    const host = { host: `127.0.0.1:${port}` }
    expect((await http(port, "GET", "/v1/transitions", host)).status).toBe(401)
    expect(
      (await http(port, "GET", "/v1/transitions", { ...host, authorization: "Bearer wrong" })).status,
    ).toBe(401)
    expect(
      (await http(port, "GET", "/v1/transitions", { ...host, authorization: "Bearer local-secret-token" }))
        .status,
    ).toBe(200)
  }, 60_000)
})
