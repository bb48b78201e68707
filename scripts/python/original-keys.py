"""Transition keys as the real Python original derives them (PYTHONPATH = the folder holding its `mycelium`
package), for scripts/python-interop-keys.ts. Reads JSON lines on stdin, each {"binding": {...}, "kwargs": {...}}
(kwargs as the original's tool receives them, tool_call_id included) or {"task": name, "kwargs": {...}, "id_from":
[...]} (a task's request id), and prints one key per line as JSON ("MISSING" for a business key it refuses).
"""
import json
import sys
import warnings

from mycelium.task_ledger import TaskLedger
from mycelium.transition import (
    MissingRequestIdentityError,
    SideEffectClass,
    ToolTransitionBinding,
    derive_transition_key_for_call,
    request_id_from_argument,
)

warnings.simplefilter("ignore")
for line in sys.stdin:
    case = json.loads(line)
    if "task" in case:
        # As JSON: an id may hold a lone surrogate, which stdout cannot encode.
        print(json.dumps(TaskLedger(id_from=case["id_from"]).derive_request_id(case["task"], (), case["kwargs"])))
        continue
    b = case["binding"]
    binding = ToolTransitionBinding.for_tool(
        agent_id=b["agent_id"],
        policy_version=b["policy_version"],
        side_effect_class=SideEffectClass(b["side_effect_class"]),
        scope_from=b.get("scope_from") or {},
        provider_idempotency_key_param=b.get("key_param"),
    )
    if b.get("request_id_from"):
        # The ledger's request id is the business key; printed as JSON, as it may hold a lone surrogate.
        try:
            print(json.dumps(request_id_from_argument(case["tool"], b["request_id_from"], case["kwargs"])))
        except MissingRequestIdentityError:
            print(json.dumps("MISSING"))
        continue
    print(json.dumps(derive_transition_key_for_call(case["tool"], (), case["kwargs"], binding)))
