// Runs safeWrite once, for workspace-hostile-model.test.ts as a user that is not root (root may write any file, so a
// read-only file is only read-only to someone else): argv root, file name. Prints "written" or the refusal's text.
import { safeWrite } from "../../src/harness/workspace/safe-fs.ts"

const [root, name] = process.argv.slice(2) as [string, string]
try {
  await safeWrite(root, [name], "x")
  console.log("written")
} catch (e) {
  console.log(e instanceof Error ? e.message : String(e))
}
