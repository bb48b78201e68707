// The demo page: buttons drive the scripted agent in demo.ts; the tables re-read the shared ledger every 250 ms,
// so changes made by another tab show up here too.
import { CRASH_CALL, type Decision, Demo, type DemoCall, SCRIPT, SLOW_CALL, TAB_CRASH_CALL } from "./demo.ts"
import { receiptsView } from "./receipts.ts"

const params = new URL(location.href).searchParams
const dbName = params.get("db") ?? "mycelium-demo"
const demo = new Demo(dbName, Number(params.get("lease") ?? 10))
const CALLS = [...SCRIPT, CRASH_CALL, SLOW_CALL, TAB_CRASH_CALL].map((c) => c.callId)

const $ = <T extends HTMLElement>(selector: string): T => {
  const el = document.querySelector<T>(selector)
  if (!el) throw new Error(`missing ${selector}`)
  return el
}

$("#db").textContent = dbName
$<HTMLAnchorElement>("#second-tab").href = `?${params}`

function cell(text: string, className?: string): HTMLTableCellElement {
  const td = document.createElement("td")
  td.textContent = text
  if (className) td.className = className
  return td
}

function logDecision(d: Decision): void {
  const li = document.createElement("li")
  li.dataset.call = d.callId
  li.dataset.gate = d.gate
  li.className = `gate-${d.gate.split(" ")[0]}`
  li.textContent = `${d.callId}: ${d.gate} ${d.detail}`
  $("#decisions").append(li)
}

function setStatus(text: string): void {
  $("#status").textContent = text
}

async function run(c: DemoCall): Promise<void> {
  const d = await demo.call(c, () => setStatus(`${c.callId}: another tab holds it, polling…`))
  setStatus("")
  logDecision(d)
  await refresh()
}

async function refresh(): Promise<void> {
  const execBody = $("#executions tbody")
  execBody.replaceChildren(
    ...CALLS.map((id) => {
      const tr = document.createElement("tr")
      tr.append(cell(id, "mono"), cell(String(demo.executions(id))))
      tr.dataset.call = id
      tr.querySelector("td:last-child")?.setAttribute("id", `exec-${id}`)
      return tr
    }),
  )
  const rows = await demo.rows()
  $("#rows tbody").replaceChildren(
    ...rows.map((r) => {
      const tr = document.createElement("tr")
      const call = String(r.kwargs.tool_call_id ?? r.requestId)
      tr.dataset.call = call
      tr.dataset.outcome = r.terminalOutcome
      tr.append(
        cell(call, "mono"),
        cell(r.tool),
        cell(r.terminalOutcome),
        cell(r.sideEffectBoundary),
        cell(String(r.fence)),
        cell(r.operatorResolution ?? ""),
      )
      return tr
    }),
  )
  $("#receipts").textContent = await receiptsView(demo.receipts)
}

const on = (id: string, handler: () => Promise<void>): void => {
  $(`#${id}`).addEventListener("click", () => {
    handler().catch((e: unknown) => setStatus(`error: ${(e as Error).message}`))
  })
}

on("run-agent", async () => {
  for (const c of SCRIPT) await run(c)
})
on("redispatch-pay", () => run(SCRIPT[0] as DemoCall))
on("crash", async () => {
  demo.crashNext(CRASH_CALL.callId)
  await run(CRASH_CALL)
})
on("redispatch-crash", () => run(CRASH_CALL))
async function release(c: DemoCall): Promise<void> {
  const row = await demo.release(c.callId)
  logDecision({
    callId: c.callId,
    gate: "RELEASED",
    detail: `by ${row.resolvedBy}: ${row.resolutionReason} (one re-run allowed)`,
  })
  await refresh()
}

on("release-crash", () => release(CRASH_CALL))
on("start-slow", () => run(SLOW_CALL))
on("redispatch-slow", () => run(SLOW_CALL))
on("start-tab-crash", () => run(TAB_CRASH_CALL))
on("redispatch-tab-crash", () => run(TAB_CRASH_CALL))
on("mark-dead-tab-crash", async () => {
  const row = await demo.markWorkerDead(TAB_CRASH_CALL.callId)
  logDecision({
    callId: TAB_CRASH_CALL.callId,
    gate: "WORKER_DEAD",
    detail: `asserted by ${row.workerDeadAssertedBy}`,
  })
  await refresh()
})
on("release-tab-crash", () => release(TAB_CRASH_CALL))
on("finish-slow", async () => {
  if (!demo.finishSlow()) setStatus("this tab is not running the slow call")
})

setInterval(() => {
  refresh().catch(() => {})
}, 250)
await refresh()
document.body.dataset.ready = "true"
