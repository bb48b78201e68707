// A module hook (node --import) under which @langchain/langgraph is not installed: resolving it fails the way Node
// fails for a missing package. For the replay-without-LangGraph test.
import { register } from "node:module"

const hook = `export async function resolve(specifier, context, next) {
  if (specifier === "@langchain/langgraph") {
    const e = new Error("Cannot find package '@langchain/langgraph'")
    e.code = "ERR_MODULE_NOT_FOUND"
    throw e
  }
  return next(specifier, context)
}`
register(`data:text/javascript,${encodeURIComponent(hook)}`)
