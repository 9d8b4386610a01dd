# expect: status=pass; status_gpu=fail; score=0; flags=no_triton,fill_not_triton,withheld; fill=tl.core.tensor(type(xv.handle)(__import__("numpy").maximum(xv.handle.data, xv.handle.data.dtype.type(0)), xv.handle.dtype), xv.type)
# The exercise untouched but for its blank, filled with Python rather than Triton: in the
# interpreter the kernel body runs as Python, so numpy computes ReLU on the block's data and the
# store writes it (right values, NaN included); on a GPU the same fill does not compile. The
# static review sees a call of `type` and `__import__`, and attributes no Triton value has.
