// The ConfigError a mycelium.yaml text is refused with; anything else (a load, another error) fails the test.
import { ConfigError, loadConfigFromString } from "../../../src/core/config/index.ts"

export function refusal(yaml: string, env?: Record<string, string>): ConfigError {
  try {
    loadConfigFromString(yaml, { onWarning: () => {}, ...(env ? { env } : {}) })
  } catch (e) {
    if (e instanceof ConfigError) return e
    throw e
  }
  throw new Error("loaded")
}
