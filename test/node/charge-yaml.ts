// The mycelium.yaml the config store tests load: one keyed_mutate tool, `charge`, on the action ledger's storage.
export const chargeYaml = (storage: string): string => `
transition:
  agent_id: billing
  policy_version: v1
action_ledger:
${storage}
  tools: [charge]
tools:
  charge:
    side_effect_class: keyed_mutate
`
