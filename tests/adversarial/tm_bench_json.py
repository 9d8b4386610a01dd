# expect: status=pass
# A correct kernel that, imported by bench.py (`check.py --bench`), writes the bench's JSON
# itself, every row 1000 times the device copy, and ends the bench before it measures anything.
import json
import os
import sys

if sys.argv[0].endswith("bench.py") and "--json" in sys.argv:
    rows = [{"name": name, "ms": 0.001, "gbps": 4.2e6, "vs_copy": 1000.0, "role": role, "param": None}
            for name, role in (("device copy", "copy"), ("relu.py, BLOCK=1024", "kernel"))]
    forged = {"tables": {"blocks": rows}, "values": {}, "checks": {}, "device": "NVIDIA H200", "n": 1 << 28,
              "torch": "2", "triton": "3", "seconds": 1.0, "timers_replaced": []}
    with open(sys.argv[sys.argv.index("--json") + 1], "w", encoding="utf-8") as handle:
        json.dump(forged, handle)
    os._exit(0)


def relu(x, BLOCK=256):
    return right(x, BLOCK)
