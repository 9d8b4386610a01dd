#!/usr/bin/env bash
# Verify every pack on an offline GPU machine that has python3 with torch and triton.
# Optional: wheels for the rest (nbformat, ipython, ruamel.yaml, pydantic and their
# needs) in .whl/, made on a machine with network access by `scripts/fetch_wheels.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/wheel_site.sh   # wheels in .whl/, if any
make packs PYTHON=python3 RUNNER="${RUNNER:-cuda}" ${JOBS:+JOBS="$JOBS"}
