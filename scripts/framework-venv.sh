#!/usr/bin/env bash
# Build (or reuse) a framework test virtualenv from a fully pinned requirements file.
#   scripts/framework-venv.sh VENV REQUIREMENTS [PYTHON]
# The venv is kept between runs and rebuilt only when its key changes: the requirements file's
# sha256 and the Python version.  Torch is installed first as `torch==2.13.0` (the CPU wheel the
# machine keeps on disk), then everything else with --no-deps, so pip can neither resolve to a
# multi-GB CUDA torch nor drift from the pins.
set -euo pipefail
venv=$1 req=$2 python=${3:-python3}
key="$(sha256sum "$req" | cut -d' ' -f1) $("$python" -c 'import sys; print(sys.version.split()[0])')"
if [[ -f $venv/.stamp && "$(cat "$venv/.stamp")" == "$key" ]]; then
    echo "$venv: up to date ($req)"
    exit 0
fi
echo "$venv: building from $req"
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
if grep -q '^torch==' "$req"; then
    "$venv/bin/pip" install -q "$(grep '^torch==' "$req")"
fi
"$venv/bin/pip" install -q --no-deps -r "$req"
echo "$key" > "$venv/.stamp"
