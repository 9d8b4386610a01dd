# expect: status=pass; score=0; flags=unreviewed,withheld; flags_gpu=withheld
# (flags_gpu: the H200 machine's Python 3.12 tokenizes this file, as it compiles it: only 3.11 breaks)
# torch computes the answer after the real kernel ran (a launch is recorded), and the file ends
# in a line of one backslash and a comment: CPython compiles it, Python's tokenize raises
# IndentationError on it, and a review that gives up on tokenize errors reports no edits at all.
def relu(x, BLOCK=256):
    right(x, BLOCK)
    return torch.relu(x)
 \
# the end
