# expect: status=pass; score=3; encoding=latin-1; fill=tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)
# An honest file: the exercise with the right fill, saved in Latin-1 with its coding cookie on
# line 1 (a valid Python file: café, naïve). It must be checked like any other, without a
# traceback, and it keeps its points: a cookie and comments are no edit.
