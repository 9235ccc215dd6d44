#!/usr/bin/env bash
# The engine benchmark on an accelerator, in one short run: issue 14's sweep, grid and Session targets, which a
# 2-core CPU cannot meet (a 100-seed sweep there is 100 runs' arithmetic on two cores).
#
#     bash benchmarks/device.sh [engine.py's options, e.g. --repeats 3]
#
# Run from anywhere on a machine with a GPU and JAX's CUDA build, equinox, optax, jaxtyping, typer, rich, pyarrow
# and matplotlib (the library runs from src/, nothing is installed). It prints the Python, JAX and equinox versions
# and the devices, refuses to go on when JAX sees no accelerator (unless ALLOW_CPU=1), then runs
# benchmarks/engine.py: run vs the hand-written scan, the 100-seed sweep and the 10 x 10 grid vs one run, Session and
# observe_many vs the scan (every program compiled with XLA's defaults; the library sets no XLA options). Both
# outputs are also written to device.txt and engine.txt under $OUT (default: a new temporary folder, printed).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$(mktemp -d)}"
mkdir -p "$out"
python="${PYTHON:-python3}"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
"$python" - <<'EOF' 2>&1 | tee "$out/device.txt"
import os, sys

import equinox
import jax

devices = jax.devices()
print(f"python {sys.version.split()[0]}, jax {jax.__version__}, equinox {equinox.__version__}, devices {devices}")
if devices[0].platform == "cpu" and os.environ.get("ALLOW_CPU") != "1":
    sys.exit("JAX sees no accelerator (set ALLOW_CPU=1 to run on the CPU anyway)")
EOF
"$python" benchmarks/engine.py "$@" 2>&1 | tee "$out/engine.txt"
echo "outputs in $out"
