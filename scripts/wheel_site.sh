#!/usr/bin/env bash
# Sourced by the scripts that run on an offline GPU machine (gpu_verify.sh, grade_gpu.sh): where
# .whl/ holds wheels (scripts/fetch_wheels.sh), install them into a temporary folder on PYTHONPATH,
# removed when the script exits.
if ls .whl/*.whl >/dev/null 2>&1; then
  SITE="$(mktemp -d "${TMPDIR:-/tmp}/coursepack-site.XXXXXX")"
  trap 'rm -rf "$SITE"' EXIT
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" .whl/*.whl
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
