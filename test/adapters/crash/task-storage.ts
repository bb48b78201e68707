// The task store a crash test uses, by name, so the killed child and the surviving parent open the same one.
import { FileTaskStore } from "../../../src/adapters/file-tasks.ts"
import { NeonTaskStore } from "../../../src/adapters/neon-tasks.ts"
import { UpstashTaskStore } from "../../../src/adapters/upstash-tasks.ts"
import type { TaskStore } from "../../../src/tasks.ts"
import { upstashClient } from "../servers/env.ts"
import { neonPool } from "../servers/neon.ts"

export type TaskBackend = "file" | "upstash" | "neon"

/** `where`: the file path, the Redis key tag or the Postgres table name. */
export async function openTaskStore(
  backend: TaskBackend,
  where: string,
): Promise<{ storage: TaskStore; close(): Promise<void> }> {
  if (backend === "file") return { storage: new FileTaskStore(where), close: async () => {} }
  if (backend === "upstash")
    return {
      storage: new UpstashTaskStore({ redis: upstashClient(), prefix: `mycelium-test:${where}:task:` }),
      close: async () => {},
    }
  const pool = neonPool(undefined, 4)
  const storage = new NeonTaskStore({ pool, table: where })
  await storage.migrate()
  return { storage, close: () => pool.end() }
}
