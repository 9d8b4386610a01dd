#!/usr/bin/env bash
# Verify every pack on an offline GPU machine that has python3 with torch and triton.
# Optional: wheels for the rest (nbformat, ipython, ruamel.yaml, pydantic and their
# needs) in .whl/, made on a machine with network access by `scripts/fetch_wheels.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
if ls .whl/*.whl >/dev/null 2>&1; then
  SITE="$(mktemp -d "${TMPDIR:-/tmp}/coursepack-site.XXXXXX")"
  trap 'rm -rf "$SITE"' EXIT
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" .whl/*.whl
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
make packs PYTHON=python3 RUNNER="${RUNNER:-cuda}" ${JOBS:+JOBS="$JOBS"}
