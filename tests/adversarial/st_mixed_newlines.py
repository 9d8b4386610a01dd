# expect: status=pass; score=0; flags=withheld; newline=mixed; fill=tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)
# As st_lone_cr, with lines ended by CRLF, CR and LF in turn.
_exercise_relu = relu


def relu(x, BLOCK=256):
    _exercise_relu(x, BLOCK)
    return torch.relu(x)
