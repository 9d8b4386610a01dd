# expect: status=fail; flags=inputs_modified
# Computes ReLU in place, in its input, returns the input, and leaves a profile hook that puts the
# input's old values back as soon as the worker has looked at the output (before it checks its
# inputs, before it reports): a checker whose worker reads the inputs back finds them untouched.
# The trusted side reads the output where it lies, in the input's memory, once the worker stops:
# the restored input is no ReLU, and an output inside an input is an input modified.
import sys

READERS = ("region_offset", "tensor_bytes", "tensor_header")


def relu(x, BLOCK=256):
    saved = x.clone()
    n = x.numel()
    relu_kernel[(triton.cdiv(n, BLOCK),)](x, x, n, BLOCK=BLOCK)

    def hook(frame, event, arg):
        if event == "return" and frame.f_code.co_name in READERS:
            sys.setprofile(None)
            x.copy_(saved)
    sys.setprofile(hook)
    return x
