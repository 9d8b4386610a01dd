#!/usr/bin/env bash
# Issue 24's grading measurements on a GPU machine (the H200), in one command of at most 8 minutes:
# a synthetic class of lessons 2-4 (PER_LESSON submissions each: right, wrong, hanging, crashing
# and faulting, each different) graded by `coursepack grade --runner cuda`, then the same files
# through `xargs -P <cores> python check.py` (BASELINE of them per lesson), with both rates, their
# ratio and the class summary's top mistakes (bench/grade_bench.py).
#
#   scripts/grade_gpu.sh [PER_LESSON]        default 200 (600 submissions)
#
# Needs python3 with torch, triton and the generator's requirements (scripts/gpu_verify.sh's .whl/
# works here too). The sandbox needs bubblewrap: a `bwrap` on PATH, or BWRAP_DIR holding a copied
# `bwrap` (and its libraries); without one the class is graded with --sandbox off, and says so.
# Variables: JOBS (default: the CPU count, at most 16), TIMEOUT (s per case, 10), BASELINE (48),
# LESSONS (comma-separated ids; default lessons 2-4), SANDBOX (on, the default, or off), OUT (the
# classes and outputs, kept; default a new folder under TMPDIR).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/wheel_site.sh   # wheels in .whl/, if any
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [ -n "${BWRAP_DIR:-}" ]; then
  export PATH="$BWRAP_DIR:$PATH" LD_LIBRARY_PATH="$BWRAP_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
SANDBOX=${SANDBOX:-on}
if [ "$SANDBOX" = on ] && ! python3 -c 'import sys; from generator.checker.shared.sandbox import sandbox_problem as p; w = p(); print(w or "sandbox: bubblewrap"); sys.exit(1 if w else 0)'; then
  SANDBOX=off
  echo "grade_gpu: no sandbox here: grading with --sandbox off (every output says so)"
fi
CORES=$(nproc)
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/coursepack-grade-gpu.XXXXXX")}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
timeout 470 python3 bench/grade_bench.py --per-lesson "${1:-200}" --runner cuda \
  --lessons "${LESSONS:-lesson02_vector_add,lesson03_relu,lesson04_add_bias}" -j "${JOBS:-$((CORES < 16 ? CORES : 16))}" \
  --timeout "${TIMEOUT:-10}" --baseline "${BASELINE:-48}" --sandbox "$SANDBOX" --keep "$OUT"
