#!/bin/bash
# Packs everything bench/many-core.mjs needs into bench/.out/offline/, for a many-core host that
# has Python (with numpy and msgpack) but no network and no Node: Node itself, the built server
# (dist/, the addon, the stub's extensions), the production node_modules (no onnxruntime-node:
# the benchmark serves a Python model), perf_analyzer, and Triton's server and Python backend
# from bench/.venv-triton with the stub built for that host's Python. About 55 MB, xz-packed.
#
#   npm run build && node bench/vs-triton.mjs --help >/dev/null   # (Triton installs on a first run)
#   bash bench/offline/pack.sh [python-version-of-the-host, default 3.12]
#   # copy the checkout (tracked files) and bench/.out/offline/ to the host, then there:
#   bash bench/offline/run.sh [BENCH] [options]   # BENCH: many-core (default), sequence, ...
set -euo pipefail
cd "$(dirname "$0")/../.."
PYVER=${1:-3.12}
OUT=bench/.out/offline
SITE=$(ls -d bench/.venv-triton/lib/python3.*/site-packages 2>/dev/null | head -1)
HOME_T=$SITE/pytriton/tritonserver
for f in dist/cli/main.js native/build/Release/tritium_native.node native/build/python/_tritium_ipc.abi3.so \
  .venv/opt/perf_analyzer/perf_analyzer "$HOME_T/bin/tritonserver" "$HOME_T/python_backend_stubs/$PYVER/triton_python_backend_stub"; do
  [ -e "$f" ] || { echo "pack.sh: $f is missing (npm run build; a first bench/vs-triton.mjs run installs Triton)" >&2; exit 1; }
done
CUDART=$(ls .venv/lib/python3.*/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12 | head -1)
STAGE=$(mktemp -d); trap 'rm -rf "$STAGE"' EXIT
rm -rf "$OUT"; mkdir -p "$OUT"
# Triton keeps its layout: the binaries find their libraries through RPATHs relative to it.
T=$STAGE/triton; mkdir -p "$T/pytriton/tritonserver/bin" "$T/pytriton/tritonserver/backends/python" "$T/nvidia_pytriton.libs"
cp "$HOME_T/bin/tritonserver" "$T/pytriton/tritonserver/bin/"
cp "$HOME_T/backends/python/libtriton_python.so" "$HOME_T/backends/python/triton_python_backend_utils.py" "$T/pytriton/tritonserver/backends/python/"
cp "$HOME_T/python_backend_stubs/$PYVER/triton_python_backend_stub" "$T/pytriton/tritonserver/backends/python/"
cp "$SITE"/nvidia_pytriton.libs/* "$T/nvidia_pytriton.libs/"
rm -f "$T"/nvidia_pytriton.libs/libpython3-*  # pytriton's own interpreter; the server does not load it
mkdir -p "$STAGE/pa"; cp .venv/opt/perf_analyzer/* "$STAGE/pa/"; cp -L "$CUDART" "$STAGE/pa/"
export XZ_OPT="-9 -T0"
tar -C "$STAGE" -cJf "$OUT/triton.tar.xz" triton
tar -C "$STAGE" -cJf "$OUT/perf_analyzer.tar.xz" pa
xz -c "$(command -v node)" > "$OUT/node.xz"
# shellcheck disable=SC2046
tar -cJf "$OUT/app.tar.xz" dist native/build/Release/tritium_native.node native/build/python \
  $(npm ls --omit=dev --all --parseable 2>/dev/null | sed "s|^$PWD/||" | grep '^node_modules/' | grep -v onnxruntime)
echo "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git status --porcelain -- src stub native | grep -q . && echo '+changes')" > "$OUT/commit"
ls -l "$OUT"; du -sh "$OUT"
