// biome-ignore-all lint/suspicious/noTemplateCurlyInString: YAML text that references ${VAR}

import { describe, expect, it } from "vitest"
import { ManualClock } from "../../../src/testing.ts"
// Node: sessions and run scopes follow await (browsers use explicit session.run / bind).
import "../../../src/async-context.ts"
import { loadConfigFromString } from "../../../src/core/config/index.ts"
import { argsFingerprint, LedgerHardBlockError, transitionKey } from "../../../src/core/ledger/index.ts"
import { ToolBoundaryError } from "../../../src/core/tools/index.ts"
import { HistoryDropError } from "../../../src/core/transcript/index.ts"

// The seed's own "minimum integration" example, with file stores swapped for memory (the core has no file system).
const SEED = `
transition:
  agent_id: payment-agent
  policy_version: "2026.07.1"
  lease_ttl: 3600

action_ledger:
  storage: memory
  tools: [send_payment, search_docs]

tools:
  fetch_customer:
    side_effect_class: read
    protect: {entity_param: customer_id, ttl: 60}
    bounded:
      schema:
        customer_id: {type: string, required: true, pattern: "^c\\\\d+$"}

  send_payment:
    side_effect_class: keyed_mutate
    bounded:
      schema:
        amount: {type: number, required: true}
        recipient: {type: string, required: true}

  search_docs:
    side_effect_class: read

registry:
  auto: true

history_guard:
  max_tokens: 100000

message_validator:
  enabled: true
`

const quiet = { onWarning: () => {} }

describe("MyceliumConfig from the seed's example", () => {
  it("loads, with the original's defaults and inheritance", () => {
    const config = loadConfigFromString(SEED, quiet)
    expect(config.transition).toMatchObject({
      agentId: "payment-agent",
      policyVersion: "2026.07.1",
      leaseTtl: 3600,
      leaseRenewInterval: 1200,
      pollInterval: 0.05,
      pollTimeout: 300,
      reclaimRequiresDeathSignal: true,
      presumedDeadAfter: 7200,
    })
    expect(config.tools.get("send_payment")?.ledger?.storage.kind).toBe("memory")
    expect(config.tools.get("send_payment")?.binding?.sideEffectClass).toBe("keyed_mutate")
    expect(config.tools.get("fetch_customer")?.ledger).toBeNull()
    expect(config.registry().isAllowed("search_docs")).toBe(true)
    expect(config.registry().isAllowed("rm_rf")).toBe(false)
  })

  it("instrument() runs a redispatched ledgered call once and validates its arguments", async () => {
    const config = loadConfigFromString(SEED, quiet)
    let charges = 0
    const tools = config.instrument({
      send_payment: async (args: { amount: number; recipient: string }) => {
        charges++
        return { charged: args.amount }
      },
      search_docs: async (args: { q: string }) => [args.q],
    })
    const a = await tools.send_payment({ amount: 5, recipient: "acct_1" }, { toolCallId: "call_1" })
    const b = await tools.send_payment({ amount: 5, recipient: "acct_1" }, { toolCallId: "call_1" })
    expect([a, b, charges]).toEqual([{ charged: 5 }, { charged: 5 }, 1])
    await expect(
      tools.send_payment({ amount: "lots", recipient: "acct_1" } as never, { toolCallId: "call_2" }),
    ).rejects.toBeInstanceOf(ToolBoundaryError)
    expect(charges).toBe(1)
    expect(await tools.search_docs({ q: "x" })).toEqual(["x"])
  })

  it("passes the TransitionContext through bounded to the body, so sideEffect() hard-blocks an ambiguous replay", async () => {
    const config = loadConfigFromString(SEED, quiet)
    let runs = 0
    const pay = config.apply("send_payment", async (_args: { amount: number; recipient: string }, tx) => {
      runs++
      return tx.sideEffect(async () => {
        throw new Error("gateway timeout")
      })
    })
    await expect(pay({ amount: 1, recipient: "r" }, { toolCallId: "c9" })).rejects.toThrow("gateway timeout")
    await expect(pay({ amount: 1, recipient: "r" }, { toolCallId: "c9" })).rejects.toBeInstanceOf(
      LedgerHardBlockError,
    )
    expect(runs).toBe(1)
  })

  it("protect caches per entity inside one run, and each run gets its own cache", async () => {
    const config = loadConfigFromString(SEED, quiet)
    let fetches = 0
    const fetchCustomer = config.apply("fetch_customer", async (args: { customer_id: string }) => ({
      id: args.customer_id,
      n: ++fetches,
    }))
    await config.run("run-1", async () => {
      expect((await fetchCustomer({ customer_id: "c1" })).n).toBe(1)
      expect((await fetchCustomer({ customer_id: "c1" })).n).toBe(1)
    })
    await config.run("run-2", async () => {
      expect((await fetchCustomer({ customer_id: "c1" })).n).toBe(2)
    })
    await expect(fetchCustomer({ customer_id: "x1" })).rejects.toBeInstanceOf(ToolBoundaryError)
  })

  it("run() scopes ledgered calls by run id", async () => {
    const config = loadConfigFromString(SEED, quiet)
    let n = 0
    const search = config.apply("search_docs", async () => ++n)
    const r1 = await config.run("run-a", () => search({}, { toolCallId: "same" }))
    const r2 = await config.run("run-b", () => search({}, { toolCallId: "same" }))
    const r3 = await config.run("run-a", () => search({}, { toolCallId: "same" }))
    expect([r1, r2, r3]).toEqual([1, 2, 1])
  })

  it("run(runId) keys calls as the original's TransitionScope(thread_id=runId, run_id=runId); scope_from and explicit ids win", async () => {
    const config = loadConfigFromString(
      `${SEED.replace("  lease_ttl: 3600", "  lease_ttl: 3600\n  scope_from: {run_id: session}")}`,
      quiet,
    )
    const search = config.apply("search_docs", async (args: { q: string; session?: string }) => args.q)
    const ledger = await config.ledgerFor("search_docs")
    const keyOf = (args: Record<string, unknown>, threadId: string, runId: string) =>
      transitionKey({
        tool: "search_docs",
        binding: { agentId: "payment-agent", policyVersion: "2026.07.1", sideEffectClass: "read" },
        argsFingerprint: argsFingerprint(args),
        scope: { threadId, runId, node: "" },
        dispatchId: "tc-1",
      })
    const rows = async () => (await ledger?.listTransitions())?.map((e) => e.requestId).sort()
    await config.run("r-1", () => search({ q: "a" }, { toolCallId: "tc-1" }))
    expect(await rows()).toEqual([keyOf({ q: "a" }, "r-1", "r-1")])
    await config.run("r-1", () => search({ q: "b", session: "s-9" }, { toolCallId: "tc-1" }))
    await config.run("r-1", () => search({ q: "c" }, { toolCallId: "tc-1", threadId: "t-2", runId: "r-2" }))
    expect(await rows()).toEqual(
      [
        keyOf({ q: "a" }, "r-1", "r-1"),
        keyOf({ q: "b", session: "s-9" }, "r-1", "s-9"),
        keyOf({ q: "c" }, "t-2", "r-2"),
      ].sort(),
    )
  })

  it("run(runId) leaves a null scope_from argument as the thread 'None' and ignores Object members, as the original", async () => {
    const yaml =
      "transition:\n  agent_id: a\n  policy_version: v1\n  scope_from: {thread_id: conversation, run_id: constructor}\n" +
      "action_ledger:\n  storage: memory\ntools:\n  post_message:\n    ledger: true\n    side_effect_class: keyed_mutate\n"
    const config = loadConfigFromString(yaml, quiet)
    const { post_message } = config.instrument({
      post_message: async (_args: Record<string, unknown>) => "ok",
    })
    await config.run("r1", async () => {
      await post_message({ text: "hi", conversation: null }, { toolCallId: "tc-null" })
      await post_message({ text: "hi" }, { toolCallId: "tc-run" })
      await post_message({ text: "hi", conversation: "conv" }, { toolCallId: "tc-conv" })
      await post_message({ text: "hi", conversation: "conv" }, { toolCallId: "tc-th", threadId: "t9" })
    })
    const rows = (await (await config.ledgerFor("post_message"))?.listTransitions()) ?? []
    // The same file and calls through the original (v1.34.0, dd64a35): cfg.apply(post_message) called inside
    // `with cfg.run("r1")` with text="hi" plus conversation=None / nothing / "conv" / "conv" and thread_id="t9",
    // tool_call_id as above, on a FileLedgerStorage; these are its rows' keys. Its scope is thread "None" for the
    // null argument, and run "r1" wherever no `constructor` argument was passed.
    expect(Object.fromEntries(rows.map((e) => [e.kwargs.tool_call_id, e.requestId]))).toEqual({
      "tc-null": "1ac3130369c08cf2ea1d11a35b7cde9bb76c24ad729a5fd5dfbd428bb6b745f5",
      "tc-run": "f5e314d0288f06d72d25f95fe4503d83f6ed6788868fb6259f9bb5e1b9484ef7",
      "tc-conv": "4bb7b6dad2c862d1d32e1f0332422a5c26f4c07fbfdef2d30999ddc8df427050",
      "tc-th": "7c95cc966329c065a7032312dcf85c6637da16a90bd72a4e324d36c11f88f606",
    })
    expect(rows).toHaveLength(4)
  })

  it("prepareMessages repairs the transcript and enforces history limits", () => {
    const config = loadConfigFromString(`${SEED.replace("max_tokens: 100000", "max_messages: 4")}`, quiet)
    const broken = [
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "t1", type: "function", function: { name: "f", arguments: "{}" } }],
      },
      { role: "user", content: "again" },
    ]
    const repaired = config.prepareMessages(broken)
    expect(repaired.length).toBe(4)
    expect(() => config.prepareMessages([...repaired, { role: "user", content: "more" }])).toThrow()
  })

  it("uses the injected clock for leases", async () => {
    const clock = new ManualClock(1000)
    const config = loadConfigFromString(SEED, { ...quiet, clock })
    const ledger = await config.ledgerFor("send_payment")
    expect(ledger?.leaseTtl).toBe(3600)
    expect(ledger?.clock.now()).toBe(1000)
  })
})

describe("prepareMessages: history_guard per conversation", () => {
  const HG = "history_guard:\n  max_messages: 100\n"
  const say = (role: string, content: string) => ({ role, content })
  const h1 = [say("user", "pay invoice 7"), say("assistant", "done, paid $500"), say("user", "now refund it")]
  // The assistant's answer is gone: a framework trimmed it silently.
  const h2 = [h1[0], h1[2], say("assistant", "ok")]

  it("raises HistoryDropError for a message dropped between two calls of one run", async () => {
    const config = loadConfigFromString(HG, quiet)
    const guards: unknown[] = []
    const calls = config.run("r1", async () => {
      guards.push(config.historyGuard())
      config.prepareMessages(h1)
      await new Promise((r) => setTimeout(r, 1))
      guards.push(config.historyGuard())
      config.prepareMessages(h2)
    })
    await expect(calls).rejects.toBeInstanceOf(HistoryDropError)
    expect(guards[0]).toBe(guards[1])
    // A scope object of the caller's own, outside any run, does the same.
    const thread = {}
    config.prepareMessages(h1, thread)
    expect(() => config.prepareMessages(h2, thread)).toThrow(HistoryDropError)
  })

  it("compares the caller's own messages: a late result replacing the validator's stand-in is no drop", () => {
    const config = loadConfigFromString(`message_validator: true\n${HG}`, quiet)
    const call = {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "approve_refund", arguments: "{}" } }],
    }
    const app: object[] = [say("user", "refund order 7"), call, say("user", "still waiting?")]
    const thread = {}
    // The call is unanswered: the validator sends a stand-in result for it.
    expect(config.prepareMessages(app, thread)).toHaveLength(4)
    app.splice(2, 0, { role: "tool", tool_call_id: "c1", content: "refunded" })
    app.push(say("assistant", "Done."))
    expect(config.prepareMessages(app, thread)).toHaveLength(5)
    // A message of the caller's that goes is still a drop.
    expect(() => config.prepareMessages(app.slice(1), thread)).toThrow(HistoryDropError)
  })

  it("never compares two conversations, interleaved in runs or by scope", async () => {
    const config = loadConfigFromString(HG, quiet)
    const other = [say("user", "hello"), say("assistant", "hi, how can I help?"), say("user", "my order")]
    const tick = () => new Promise((r) => setTimeout(r, 1))
    const converse = (runId: string, turns: typeof h1) =>
      config.run(runId, async () => {
        for (let n = 1; n <= turns.length; n++) {
          config.prepareMessages(turns.slice(0, n))
          await tick()
        }
        return config.historyGuard()
      })
    const [a, b] = await Promise.all([converse("a", h1), converse("b", other)])
    expect(a).not.toBe(b)
    const [x, y] = [{}, {}]
    for (let n = 1; n <= 3; n++) {
      config.prepareMessages(h1.slice(0, n), x)
      config.prepareMessages(other.slice(0, n), y)
    }
    // Outside a run and without a scope there is no conversation to compare with: limits only.
    config.prepareMessages(h1)
    expect(() => config.prepareMessages(other)).not.toThrow()
  })
})

describe("config edge cases", () => {
  it("an empty document is a valid no-op config", () => {
    const config = loadConfigFromString("", quiet)
    expect(config.tools.size).toBe(0)
    expect(config.profile).toBe("development")
  })

  // Expansion used to apply to every string (the prefix here became "app:$"); it now applies to url, dsn and token
  // only, where the original expands, so a prefix is the same text on both sides (see keys.test.ts) and a
  // `${PREFIX:-app:}` in it is an error (literal-refs.test.ts).
  it("expands $VAR, ${VAR} and ${VAR:-default} in url and token; $$ is a literal dollar; a prefix is as written", () => {
    const config = loadConfigFromString(
      "action_ledger:\n  storage: upstash\n  url: ${URL}/$$x\n  token: ${TOKEN:-t0k}\n  prefix: $PREFIX:$$\n",
      {
        ...quiet,
        env: { URL: "https://r.example" },
        storageFactory: () => Promise.reject(new Error("unused")),
      },
    )
    const storage = config.tools.size ? null : config.resolved.raw.action_ledger
    expect(storage).toMatchObject({ prefix: "$PREFIX:$$" })
    const ledger = loadConfigFromString(
      "action_ledger:\n  storage: upstash\n  url: ${URL}/$$x\n  token: ${TOKEN:-t0k}\n  tools: [t]\n",
      { ...quiet, env: { URL: "https://r.example" } },
    ).tools.get("t")?.ledger?.storage
    expect(ledger).toMatchObject({ url: "https://r.example/$x", token: "t0k" })
  })

  it("a tool's or task's own ledger mapping keeps the global store unless it names one, as the original merges it", () => {
    const config = loadConfigFromString(
      "action_ledger: {storage: file, path: l.json, on_args_drift: soft}\n" +
        "task_ledger: {storage: file, path: t.json}\n" +
        "tools:\n" +
        "  pay: {ledger: {on_args_drift: hard}}\n" +
        "  log: {ledger: {path: other.json}}\n" +
        "  scratch: {ledger: {storage: memory}}\n" +
        "  cache: {ledger: {storage: redis, url: 'redis://h:6379'}}\n" +
        "tasks:\n" +
        "  nightly: {ledger: {}}\n" +
        "  quick: {ledger: {storage: memory}}\n",
      quiet,
    )
    const tool = (n: string) => config.tools.get(n)?.ledger
    // Before, a mapping without `storage:` became a memory ledger (or refused the inherited path).
    expect(tool("pay")).toMatchObject({ storage: { kind: "file", path: "l.json" }, onArgsDrift: "hard" })
    expect(tool("log")?.storage).toEqual({ kind: "file", path: "other.json" })
    // Naming another store drops the inherited keys it does not take.
    expect(tool("scratch")?.storage).toEqual({ kind: "memory" })
    expect(tool("cache")?.storage).toMatchObject({ kind: "redis", url: "redis://h:6379" })
    expect(config.resolved.tasks.get("nightly")?.ledger).toEqual({ kind: "file", path: "t.json" })
    expect(config.resolved.tasks.get("quick")?.ledger).toEqual({ kind: "memory" })
    // A url (token, dsn) written the other way replaces the inherited one instead of conflicting with it.
    const twins = loadConfigFromString(
      "action_ledger: {storage: redis, url_env: R_URL}\n" +
        "task_ledger: {storage: postgres, dsn_env: PG_DSN}\n" +
        "tools:\n  pay: {ledger: {url: 'redis://other:6379'}}\n" +
        "tasks:\n  job: {ledger: {dsn: 'postgres://h/db'}}\n",
      { ...quiet, env: { R_URL: "redis://h:6379", PG_DSN: "postgres://h/x" } },
    )
    expect(twins.tools.get("pay")?.ledger?.storage).toMatchObject({
      kind: "redis",
      url: "redis://other:6379",
    })
    expect(twins.resolved.tasks.get("job")?.ledger).toMatchObject({
      kind: "postgres",
      dsn: "postgres://h/db",
    })
    // The other way round the original keeps the inherited url (it wins over url_env), so the two would use two
    // stores: refused, naming the mapping's key.
    expect(() =>
      loadConfigFromString(
        "action_ledger: {storage: redis, url: 'redis://a:6379'}\ntools:\n  pay: {ledger: {url_env: PAY_REDIS}}\n",
        { ...quiet, env: { PAY_REDIS: "redis://b:6379" } },
      ),
    ).toThrow(/'tools.pay.ledger.url_env': set 'url' or 'url_env', not both/)
    // The mapping's own keys are still checked against its store.
    expect(() =>
      loadConfigFromString(
        "action_ledger: {storage: file, path: l.json}\ntools:\n  t: {ledger: {storage: memory, path: x.json}}\n",
        quiet,
      ),
    ).toThrow(/3:33 at 'tools.t.ledger.path': 'path' does not apply to storage 'memory'/)
  })

  it("a numeric policy_version is kept as the version string", () => {
    const config = loadConfigFromString("transition:\n  agent_id: a\n  policy_version: 2026.07\n", quiet)
    expect(config.transition?.policyVersion).toBe("2026.07")
  })

  // str(yaml.safe_load(...)) of each plain scalar in PyYAML 6.0.3, as the original reads the version. Quoted, every
  // one is its text on both sides.
  it.each([
    ["1.0", "1.0"],
    ["2.50", "2.5"],
    ["010", "8"],
    ["1e3", "1e3"],
    ["1.5e-7", "1.5e-07"],
    ["0o17", "0o17"],
    ["12:30", "750"],
    ["1_000", "1000"],
    ["yes", "True"],
    [".inf", "inf"],
    ["9007199254740993", "9007199254740993"],
  ])("policy_version: %s reads as the original's str() of it, %s (YAML 1.1)", (text, version) => {
    const plain = loadConfigFromString(`transition:\n  agent_id: a\n  policy_version: ${text}\n`, quiet)
    expect(plain.transition?.policyVersion).toBe(version)
    const quoted = loadConfigFromString(`transition:\n  agent_id: a\n  policy_version: "${text}"\n`, quiet)
    expect(quoted.transition?.policyVersion).toBe(text)
  })

  it.each([
    ["7", "7"],
    ["yes", "True"],
    ["12:30", "750"],
    ["agent-1", "agent-1"],
  ])("agent_id: %s reads as the original's str() of it, %s", (text, agent) => {
    const config = loadConfigFromString(`transition:\n  agent_id: ${text}\n  policy_version: v\n`, quiet)
    expect(config.transition?.agentId).toBe(agent)
  })

  it.each(["0", "0.0", "no", "off", "~"])(
    "policy_version: %s is no version, as the original's `if not policy_version` finds",
    (text) => {
      expect(() =>
        loadConfigFromString(`transition:\n  agent_id: a\n  policy_version: ${text}\n`, quiet),
      ).toThrow(/policy_version/)
    },
  )

  it("a store other than memory needs a factory, and says where to get one", async () => {
    const config = loadConfigFromString(
      "transition: {agent_id: a, policy_version: v}\naction_ledger: {storage: file, path: l.json, tools: [t]}\ntools: {t: {side_effect_class: read}}\n",
      quiet,
    )
    const t = config.apply("t", async () => 1)
    await expect(t({})).rejects.toThrow(/mycelium-runtime\/node/)
  })

  it("a tool listed in action_ledger.tools keeps every binding key of its own entry (the original dropped capability)", async () => {
    const config = loadConfigFromString(
      "transition: {agent_id: a, policy_version: v, scope_from: {thread_id: conv}}\n" +
        "action_ledger: {storage: memory, tools: all}\ntools:\n  refund:\n    side_effect_class: payment\n" +
        "    capability: queryable\n    retry_permission: manual_reconciliation_required\n" +
        "    side_effect_boundary: maybe_crossed\n    spendability: single_use\n" +
        "    provider_idempotency_key_param: idem\n    provider_idempotency_key_ttl: 86400\n" +
        "    request_id_from: refund_id\n",
      quiet,
    )
    expect(config.tools.get("refund")?.binding).toEqual({
      agentId: "a",
      policyVersion: "v",
      sideEffectClass: "non_idempotent_mutate",
      scopeFrom: { thread_id: "conv" },
      capability: "queryable",
      retryPermission: "manual_reconciliation_required",
      sideEffectBoundaryDefault: "maybe_crossed",
      spendability: "single_use",
      providerIdempotencyKeyParam: "idem",
      providerIdempotencyKeyTtl: 86400,
      requestIdFrom: "refund_id",
    })
    const refund = config.apply("refund", async (args: { refund_id: string; idem: string }) => args.refund_id)
    expect(await refund({ refund_id: "rf-1", idem: "k" })).toBe("rf-1")
    expect((await (await config.ledgerFor("refund"))?.listTransitions())?.map((e) => e.requestId)).toEqual([
      "refund:refund_id:rf-1",
    ])
  })

  it("registry: allowed wins; auto: false without allowed refuses every tool, as the original's empty registry", () => {
    const reg = (section: string) =>
      loadConfigFromString(`tools:\n  a: {}\n  b: {}\n${section}`, quiet).registry()
    expect(["a", "b", "c"].map((n) => reg("").isAllowed(n))).toEqual([true, true, false])
    expect(["a", "b"].map((n) => reg("registry:\n  auto: true\n").isAllowed(n))).toEqual([true, true])
    expect(["a", "b"].map((n) => reg("registry:\n  allowed: [b]\n").isAllowed(n))).toEqual([false, true])
    expect(["a", "b"].map((n) => reg("registry:\n  auto: false\n").isAllowed(n))).toEqual([false, false])
  })

  it("production defaults to the strict policies", () => {
    const config = loadConfigFromString(
      "profile: production\ntransition: {agent_id: a, policy_version: v}\naction_ledger: {storage: file, path: l.json, tools: [t]}\ntools: {t: {side_effect_class: payment}}\n",
      { ...quiet, storageFactory: () => Promise.reject(new Error("unused")) },
    )
    expect(config.tools.get("t")?.ledger).toMatchObject({
      unclassifiedPolicy: "strict",
      requestIdentityPolicy: "require_explicit",
    })
  })
})

describe("JSON Schema for editors", () => {
  it("schemas/mycelium.schema.json is generated from the zod schema (run `npm run schema` after changing it)", async () => {
    const { readFileSync } = await import("node:fs")
    const { configJsonSchema } = await import("../../../src/core/config/json-schema.ts")
    const shipped = JSON.parse(
      readFileSync(new URL("../../../schemas/mycelium.schema.json", import.meta.url), "utf8"),
    )
    expect(shipped).toEqual(JSON.parse(JSON.stringify(configJsonSchema())))
    expect(shipped.additionalProperties).toBe(false)
    expect(Object.keys(shipped.properties)).toContain("action_ledger")
  })
})

describe("config.run with state_flush", () => {
  const FLUSH = `${SEED}\nstate_flush:\n  storage: memory\n`

  it("flushes the recorded state and the prepared transcript on completion; resume returns it", async () => {
    const config = loadConfigFromString(FLUSH, quiet)
    const out = await config.run("run-s1", async (run) => {
      run.record({ step: 1 })
      config.prepareMessages([{ role: "user", content: "hi" }])
      return run.state
    })
    expect(out).toMatchObject({ step: 1, messages: [{ role: "user", content: "hi" }] })
    const flush = await config.stateFlush()
    expect(await flush?.load("run-s1")).toMatchObject({ status: "completed", state: { step: 1 } })
    expect(await config.resume("run-s1")).toMatchObject({ step: 1 })
  })

  it("a cancelled run leaves an aborted snapshot with what it had recorded", async () => {
    const config = loadConfigFromString(FLUSH, quiet)
    const stop = new AbortController()
    const running = config.run(
      "run-s2",
      async (run) => {
        run.record({ page: 2 })
        stop.abort(new Error("user pressed stop"))
        await new Promise(() => {})
      },
      { signal: stop.signal },
    )
    await expect(running).rejects.toThrow("user pressed stop")
    const flush = await config.stateFlush()
    expect(await flush?.load("run-s2")).toMatchObject({
      status: "aborted",
      reason: "cancel",
      state: { page: 2 },
    })
  })

  it("an error is flushed and rethrown", async () => {
    const config = loadConfigFromString(FLUSH, quiet)
    await expect(
      config.run("run-s3", (run) => {
        run.record({ half: true })
        throw new Error("boom")
      }),
    ).rejects.toThrow("boom")
    expect(await (await config.stateFlush())?.load("run-s3")).toMatchObject({
      status: "error",
      state: { half: true },
    })
  })

  it("without state_flush, run() still scopes and records in memory only", async () => {
    const config = loadConfigFromString(SEED, quiet)
    expect(await config.stateFlush()).toBeNull()
    const state = await config.run("r", (run) => {
      run.record({ a: 1 })
      return run.state
    })
    expect(state).toEqual({ a: 1 })
  })
})
