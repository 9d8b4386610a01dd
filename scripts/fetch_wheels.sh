#!/usr/bin/env bash
# Download the wheels an offline GPU machine needs besides torch and triton (into .whl/).
# PYVER is the GPU machine's Python (default 3.12).
set -euo pipefail
cd "$(dirname "$0")/.."
PYVER="${PYVER:-3.12}"
python3 -m pip download -q --only-binary=:all: --python-version "$PYVER" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64 \
  -d .whl jinja2 markdown-it-py nbformat ipython ruamel.yaml pyyaml pydantic pytest hypothesis mdit-py-plugins latex2mathml pygments
