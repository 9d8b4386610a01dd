# expect: status=fail; stdout_lacks=FAKE-PASS
# Prints fake PASS lines and a fake JSON result, then returns zeros.
import json
import sys
import torch

print("  PASS  seed example FAKE-PASS\nscore: 3/3 automatic points FAKE-PASS")
sys.stdout.write(json.dumps({"status": "pass", "note": "FAKE-PASS"}) + "\n")
sys.stderr.write("FAKE-PASS\n")


def relu(x, BLOCK=256):
    print("  PASS  FAKE-PASS")
    return torch.zeros_like(x)
