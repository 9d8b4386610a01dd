# expect: status=pass; score=0; flags=withheld; newline=cr; fill=tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)
# The exercise with its right fill and an edit outside the blank (the entry is replaced by one
# that runs the kernel and answers with torch.relu), every line ended by a lone CR, as Python
# reads it: the review must see the edit in the text Python runs.
_exercise_relu = relu


def relu(x, BLOCK=256):
    _exercise_relu(x, BLOCK)
    return torch.relu(x)
