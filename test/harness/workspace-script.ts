// A plan whose task drives a real workspace through harness tools. Run under Node, Deno and Bun; prints one JSON line.
import { runPlan, ScriptedModel } from "../../src/harness/index.ts"
import { withWorkspace, workspaceTools } from "../../src/harness/workspace/index.ts"

const runtime = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node"
const out = await withWorkspace({ runId: "ws-script" }, async (ws) => {
  const model = new ScriptedModel({
    byTask: {
      build: [
        {
          tool_calls: [{ name: "cmd_run", args: { command: "mkdir -p pkg && cd pkg" } }],
        },
        { tool_calls: [{ name: "cmd_run", args: { command: "echo hi > made.txt && pwd" } }] },
        { tool_calls: [{ name: "file_read", args: { path: "pkg/made.txt" } }] },
        { tool_calls: [{ name: "file_write", args: { path: "/etc/passwd", content: "x" } }] },
        { text: "built" },
      ],
    },
  })
  const result = await runPlan(
    { tasks: [{ task_id: "build", prompt: "build it" }], output_task_id: "build" },
    { model, tools: workspaceTools(ws) },
  )
  const toolReturns = model.requests
    .at(-1)
    ?.messages.filter((m) => m.role === "tool")
    .map((m) => JSON.parse(m.content))
  return { output: result.output, steps: ws.step, toolReturns }
})
console.log(
  JSON.stringify({
    runtime,
    output: out.output,
    steps: out.steps,
    pwdEndsWithPkg: String(out.toolReturns?.[1]?.stdout).trim().endsWith("/pkg"),
    read: out.toolReturns?.[2]?.content,
    refused: out.toolReturns?.[3]?.kind,
  }),
)
