#!/usr/bin/env bash
# One batched session on a lent GPU machine (the `device` tool). Parts, run in the order given
# (default: all): probe packs interp student bench tests. Logs and reports go to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"; LOG="$OUT/log.txt"
PARTS="${*:-probe packs interp student bench tests}"
say() { echo "=== $*" | tee -a "$LOG"; }
say "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH="/tmp/site"
for part in $PARTS; do case "$part" in
probe)
  say "semantics probe"; python3 bench/semantics_probe.py 2>&1 | tee -a "$LOG" ;;
packs)
  rm -rf build
  say "make packs (cuda runner, cold: no verification cache, no Triton cache)"
  /usr/bin/time -f "wall %e s" make packs PYTHON=python3 RUNNER=cuda 2>&1 | tee -a "$LOG"
  cp build/report.md "$OUT/report_cuda.md"; cp build/report.json "$OUT/report_cuda.json"
  sha256sum build/dist/*.zip | tee -a "$LOG"
  say "make packs again (no-op)"; /usr/bin/time -f "wall %e s" make packs PYTHON=python3 RUNNER=cuda 2>&1 | tail -2 | tee -a "$LOG"
  sha256sum build/dist/*.zip | tee -a "$LOG"
  say "re-verify with Triton's cache warm (verification cache dropped)"
  rm -rf build/cache/verify build/cache/last_build.json
  /usr/bin/time -f "wall %e s" make packs PYTHON=python3 RUNNER=cuda 2>&1 | grep -E "verify lesson|ok   answer|bench|done|wall" | tee -a "$LOG" ;;
interp)
  say "verify with the interpreter runner"; /usr/bin/time -f "wall %e s" make verify PYTHON=python3 RUNNER=interpreter 2>&1 | tail -30 | tee -a "$LOG"
  cp build/report.md "$OUT/report_interp.md" ;;
student)
  rm -rf /tmp/u; mkdir -p /tmp/u; for z in build/dist/*.zip; do python3 -m zipfile -e "$z" /tmp/u; done
  cp /tmp/u/lesson03_relu-en-answer/verification.json "$OUT/verification_en.json"
  cp /tmp/u/lesson03_relu-en-answer/lesson.md "$OUT/answer_lesson_en.md"
  say "student: answer pack, en"; (cd /tmp/u/lesson03_relu-en-answer && /usr/bin/time -f "wall %e s" python3 check.py; echo "exit $?") 2>&1 | tee -a "$LOG"
  for loc in zh-CN en; do
    say "student: tl.where fill, $loc"
    (cd /tmp/u/lesson03_relu-$loc-exercise && sed 's/______/tl.where(xv > 0.0, xv, 0.0)/' relu.py > /tmp/where.py && python3 check.py /tmp/where.py; echo "exit $?") 2>&1 | tee -a "$LOG"
  done ;;
bench)
  say "check.py --bench"; (cd /tmp/u/lesson03_relu-en-answer && python3 check.py --bench) 2>&1 | tee -a "$LOG"
  say "bench.py (answer pack)"; (cd /tmp/u/lesson03_relu-en-answer && python3 bench.py) 2>&1 | tee -a "$LOG" ;;
tests)
  say "GPU tests"; python3 -m pytest -q -m cuda tests/test_gpu.py -p no:cacheprovider 2>&1 | tail -5 | tee -a "$LOG" ;;
esac; done
