#!/usr/bin/env bash
# Re-run the GPU measurements from a checkout, on any machine where torch sees a CUDA GPU:
# build and verify every pack on the GPU, run the GPU tests, and keep the report.
#
#   scripts/gpu_rerun.sh [OUTDIR]        (default OUTDIR: build/gpu-rerun-<UTC time>)
#
# PYTHON (default python3) must have torch with CUDA and triton, the generator's libraries
# (jinja2 markdown-it-py nbformat ruamel.yaml pydantic; IPython for the notebook step)
# and pytest + hypothesis for the tests. On an offline machine, put their wheels in .whl/
# (scripts/fetch_wheels.sh, where there is network); they are installed into a temporary folder.
# OUTDIR receives log.txt, report.md, report.json, zips.sha256 and tests.txt.
# Verification results are cached (build/cache): an unchanged rebuild on the same machine and versions
# reuses them; FRESH=1 drops that cache first, so that every step runs and is timed again.
# Exit status: 0 when the packs verified and the GPU tests passed, 1 when either failed,
# 2 when this machine cannot run them (no CUDA GPU, missing libraries).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
PY="${PYTHON:-python3}"
OUT="${1:-build/gpu-rerun-$(date -u +%Y%m%dT%H%M%SZ)}"

die() { echo "gpu_rerun: $*" >&2; exit 2; }
command -v "$PY" >/dev/null 2>&1 || die "no Python at '$PY' (set PYTHON=/path/to/python)"

WHEELS="${WHEELS:-.whl}"   # wheels for an offline GPU machine (scripts/fetch_wheels.sh makes them)
if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  SITE="$(mktemp -d "${TMPDIR:-/tmp}/coursepack-site.XXXXXX")" || die "cannot create a temporary folder"
  trap 'rm -rf "$SITE"' EXIT
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "$WHEELS"/*.whl \
    || die "installing the wheels in $WHEELS/ failed"
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi

# Does torch see a CUDA GPU? One line: device, torch, triton, CUDA, Python.
ENV_LINE="$("$PY" - <<'EOF' 2>&1
import gc, os, platform, sys
gc.disable()   # and os._exit below: no collection passes over torch's objects (a third of the time)
def end(code, text):
    print(text, file=sys.stderr if code else sys.stdout, flush=True)
    os._exit(code)
try:
    import torch
except ImportError as exc:
    end(1, f"torch cannot be imported ({exc})")
if not torch.cuda.is_available():
    end(1, f"torch {torch.__version__} sees no CUDA GPU (torch.cuda.is_available() is False)")
try:
    import triton
except ImportError as exc:
    end(1, f"triton cannot be imported ({exc})")
end(0, f"{torch.cuda.get_device_name(0)} · torch {torch.__version__} · triton {triton.__version__}"
       f" · CUDA {torch.version.cuda} · Python {platform.python_version()}")
EOF
)" || die "$ENV_LINE"

MISSING="$("$PY" - <<'EOF'
import importlib.util
names = {"jinja2": "jinja2", "markdown_it": "markdown-it-py", "nbformat": "nbformat", "ruamel.yaml": "ruamel.yaml",
         "pydantic": "pydantic", "pytest": "pytest", "hypothesis": "hypothesis"}
def present(module):
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False
print(" ".join(package for module, package in names.items() if not present(module)))
EOF
)"
[ -z "$MISSING" ] || die "missing in $PY: $MISSING (pip install them, or put their wheels in .whl/)"
NOTEBOOK_ARGS=""
if ! "$PY" -c "import IPython" >/dev/null 2>&1; then
  NOTEBOOK_ARGS="--no-notebook"   # the answer notebook is not executed; the report says so
fi

mkdir -p "$OUT" || die "cannot create $OUT"
LOG="$OUT/log.txt"
: >"$LOG"
say() { echo "=== $*" | tee -a "$LOG"; }
say "$ENV_LINE"
say "$(git rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout') $(git status --porcelain 2>/dev/null | grep -q . && echo '(uncommitted changes)')"

say "make packs RUNNER=cuda PYTHON=$PY ${NOTEBOOK_ARGS:+ARGS=$NOTEBOOK_ARGS}"
STARTED="$OUT/.started"; : >"$STARTED"
if [ "${FRESH:-0}" = 1 ]; then rm -rf build/cache/verify build/cache/last_build.json; say "FRESH=1: verification cache dropped"; fi
start=$(date +%s)
make packs RUNNER=cuda PYTHON="$PY" ${NOTEBOOK_ARGS:+ARGS="$NOTEBOOK_ARGS"} 2>&1 | tee -a "$LOG"
packs_rc=${PIPESTATUS[0]}
packs_s=$(( $(date +%s) - start ))
for f in report.md report.json; do
  # a successful build's report describes build/dist (also when nothing changed); after a failure,
  # only a report this run wrote (a failed verification), never one left by an earlier build
  if [ -f "build/$f" ] && { [ "$packs_rc" = 0 ] || [ "build/$f" -nt "$STARTED" ]; }; then cp "build/$f" "$OUT/$f"; fi
done
rm -f "$STARTED"
if [ "$packs_rc" = 0 ]; then sha256sum build/dist/*.zip >"$OUT/zips.sha256"; fi

say "GPU tests: make test-gpu PYTHON=$PY"
start=$(date +%s)
make test-gpu PYTHON="$PY" ARGS="-p no:cacheprovider" 2>&1 | tee "$OUT/tests.txt"
tests_rc=${PIPESTATUS[0]}
cat "$OUT/tests.txt" >>"$LOG"
tests_s=$(( $(date +%s) - start ))
tests_line="$(grep -E '(passed|failed|skipped|error)' "$OUT/tests.txt" | tail -1 | sed 's/=//g; s/^ *//; s/ *$//')"
if [ "$tests_rc" = 0 ] && ! grep -q "passed" <<<"$tests_line"; then
  tests_rc="1, nothing passed"   # a GPU is visible: GPU tests that all skip tested nothing
fi

echo
echo "GPU re-run summary"
echo "  machine:  $ENV_LINE"
echo "  packs:    $([ "$packs_rc" = 0 ] && echo verified || echo "FAILED (exit $packs_rc)") in ${packs_s} s${NOTEBOOK_ARGS:+ (notebook step skipped: IPython missing)}"
echo "  tests:    $([ "$tests_rc" = 0 ] && echo ok || echo "FAILED (exit $tests_rc)"): ${tests_line:-no pytest summary} (${tests_s} s)"
if [ -f "$OUT/report.md" ]; then
  echo "  report:   $OUT/report.md (per-step results, timings, GPU-vs-interpreter disagreements)"
else
  echo "  report:   none (the build stopped before verification; see $LOG)"
fi
echo "  kept:     $OUT/: $(ls "$OUT" | tr '\n' ' ')"
[ "$packs_rc" = 0 ] && [ "$tests_rc" = 0 ] && exit 0
exit 1
