# expect: status=fail; events=gc
# Searches the process's objects for the expected output (a tensor of x's shape that is not x).
import gc
import torch


def relu(x, BLOCK=256):
    for obj in gc.get_objects():
        try:
            if isinstance(obj, torch.Tensor) and obj is not x and obj.shape == x.shape and obj.dtype == x.dtype:
                if bool((obj >= 0).all()) and not torch.equal(obj, x):
                    return obj.clone()
        except Exception:
            pass
    return torch.zeros_like(x)
