# expect: status=pass; flags=inputs_modified
# Computes ReLU in place, in its input, and returns the input.


def relu(x, BLOCK=256):
    n = x.numel()
    relu_kernel[(triton.cdiv(n, BLOCK),)](x, x, n, BLOCK=BLOCK)
    return x
