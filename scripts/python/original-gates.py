"""Gate decisions of the real Python original (PYTHONPATH = the folder holding its `mycelium` package), for
scripts/python-interop-gates.ts. Reads JSON lines on stdin, each {"row": {...}, "binding": {...}, "incoming": key|null},
and prints, as a JSON line each, [gate, gate after the original's field repair (or null)] for a side-effecting binding
and the read gate for `read`. Rows are read with LedgerEntry.from_dict, as its storages read them.
"""
import dataclasses
import json
import sys
import warnings

from mycelium.action_ledger import LedgerEntry
from mycelium.transition import (
    RetryPermission,
    SideEffectClass,
    Spendability,
    ToolTransitionBinding,
)
from mycelium.transition_resolution import (
    TransitionGate,
    repair_transition_fields,
    resolve_read_only_gate,
    resolve_side_effect_gate,
)

warnings.simplefilter("ignore")


def gate(entry, binding, incoming):
    if binding.side_effect_class == SideEffectClass.READ:
        return resolve_read_only_gate(entry).value
    return resolve_side_effect_gate(entry, binding, incoming_provider_idempotency_key=incoming).value


for line in sys.stdin:
    case = json.loads(line)
    b = case["binding"]
    binding = ToolTransitionBinding.for_tool(
        agent_id="a",
        policy_version="1",
        side_effect_class=SideEffectClass(b["side_effect_class"]),
        retry_permission=RetryPermission(b["retry_permission"]) if b.get("retry_permission") else None,
        spendability=Spendability(b["spendability"]) if b.get("spendability") else None,
        provider_idempotency_key_param=b.get("key_param"),
        provider_idempotency_key_ttl=b.get("key_ttl"),
    )
    try:
        entry = LedgerEntry.from_dict(case["row"])
    except Exception as e:  # noqa: BLE001 - a row the original cannot read
        print(json.dumps(["unreadable", type(e).__name__]))
        continue
    first = gate(entry, binding, case["incoming"])
    after = None
    if first == TransitionGate.REPAIR.value:
        entry = dataclasses.replace(entry, **repair_transition_fields(entry))
        after = gate(entry, binding, case["incoming"])
    print(json.dumps([first, after]))
