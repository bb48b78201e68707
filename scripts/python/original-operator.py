"""An operator's release through the real Python original's API (PYTHONPATH = the folder holding its `mycelium`
package), for scripts/python-interop-operators.ts. Prints one JSON line: {"error": name|null, "message": ...,
"resolution": ...}.

Usage: python3 original-operator.py <store> <request_id> <completed|not_executed> [result as JSON]
  store: as for original-interop.py.
"""
import json
import sys
import warnings

from interop_store import storage_from_spec
from mycelium import ActionLedger

warnings.simplefilter("ignore")
spec, request_id, verified = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
result = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
storage = storage_from_spec(spec)

try:
    entry = ActionLedger(storage, lease_ttl=1.0).release(
        request_id, verified=verified, result=result, by="py-ops", reason="checked the provider"
    )
    print(json.dumps({"error": None, "message": None, "resolution": entry.operator_resolution}))
except Exception as e:  # noqa: BLE001 - the caller compares the error's class name
    print(json.dumps({"error": type(e).__name__, "message": str(e), "resolution": None}))
