#!/usr/bin/env bash
# Creates (or updates) the virtual environment with the given extras: `scripts/venv.sh .venv viewer`.
# uv does it in seconds; it is taken from PATH, else installed from PyPI into .tools/ once. Where uv
# cannot be had, plain venv + pip does the same, only slower. Progress goes to the terminal.
set -euo pipefail
venv=$1
extras=$2
cd "$(dirname "$0")/.."
UV_VERSION=0.13.9

step() { printf '==> %s\n' "$*"; }

find_uv() {
  if command -v uv >/dev/null 2>&1; then command -v uv; return; fi
  if [ -x .tools/bin/uv ]; then echo .tools/bin/uv; return; fi
  step "installing uv $UV_VERSION from PyPI into .tools/ (once)" >&2
  if python3 -m venv .tools >/dev/null 2>&1 \
      && .tools/bin/python -m pip install --disable-pip-version-check -q "uv==$UV_VERSION" >&2; then
    echo .tools/bin/uv
  fi
}

uv=$(find_uv || true)
if [ -n "$uv" ]; then
  if [ ! -x "$venv/bin/python" ]; then
    step "creating $venv with $("$uv" --version)"
    "$uv" venv --quiet --python python3 "$venv"
  fi
  step "installing otel-inputs[$extras] into $venv"
  VIRTUAL_ENV="$venv" "$uv" pip install -e ".[$extras]"
else
  step "uv is not available; creating $venv with venv + pip (a few minutes)"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar on -e ".[$extras]"
fi
