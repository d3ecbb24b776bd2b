#!/bin/bash
# Runs a benchmark of bench/ on a host prepared by bench/offline/pack.sh (see there), from the
# checkout's root, with bench/.out/offline/ beside it:
#
#   bash bench/offline/run.sh [BENCH] [options of bench/BENCH.mjs]
#
# BENCH defaults to many-core; many-core, sequence and bls-overhead also get --servers (Triton
# too where its stub can run here). The output goes to stdout and to $OUT (default
# bench/.out/offline/result/BENCH.txt).
cd "$(dirname "$0")/../.."
BENCH=many-core
case "$1" in --* | "") ;; *) BENCH=$1; shift ;; esac
[ -f "bench/$BENCH.mjs" ] || { echo "run.sh: no bench/$BENCH.mjs" >&2; exit 2; }
R=$PWD; P=$R/bench/.out/offline; OUT=${OUT:-$P/result}; D=$(mktemp -d); mkdir -p "$OUT" "$D/bin"
log() { echo "== $(date +%T) $*"; }
unxz_to() { if command -v xz >/dev/null; then xz -dc "$1"; else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"; fi; }
log "$(nproc) cores; $(df -h /dev/shm | tail -1)"
unxz_to "$P/node.xz" > "$D/bin/node" && chmod +x "$D/bin/node"
unxz_to "$P/triton.tar.xz" | tar -x -C "$D"
unxz_to "$P/perf_analyzer.tar.xz" | tar -x -C "$D"
unxz_to "$P/app.tar.xz" | tar -x
export PATH=$D/bin:$PATH
node --version || exit 1
PY=$(command -v python3); export TRITIUM_PYTHON=$PY
"$PY" -c 'import sys, numpy, msgpack; print("python", sys.version.split()[0], "numpy", numpy.__version__)' || exit 1
# The stub's C objects are built for one interpreter: build them for this one (needs a compiler
# and Python's headers; without them the stub runs its pure-Python objects and says so).
node scripts/build-native.mjs --python-only 2>&1 | tail -2
# Triton's stub links libpython; an interpreter built without a shared library cannot host it.
LIBDIR=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')
VER=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
LP=$(ls "$LIBDIR/libpython$VER.so.1.0" 2>/dev/null || find /usr /opt -name "libpython$VER.so.1.0" 2>/dev/null | head -1)
[ -n "$LP" ] && export LD_LIBRARY_PATH=$(dirname "$LP")
export TRITON_HOME=$D/triton/pytriton/tritonserver TRITON_PYTHON_BIN=$(dirname "$PY")
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/pa exec %s/pa/perf_analyzer "$@"\n' "$D" "$D" > "$D/bin/perf_analyzer"; chmod +x "$D/bin/perf_analyzer"
export PERF_ANALYZER=$D/bin/perf_analyzer
# Both servers serve a KIND_CPU model: keep a GPU out of both, as on the 2-core VM.
export CUDA_VISIBLE_DEVICES=
SERVERS=tritium,triton
MISSING=$(ldd "$TRITON_HOME/backends/python/triton_python_backend_stub" "$TRITON_HOME/bin/tritonserver" | grep 'not found')
[ -n "$MISSING" ] && { echo "Triton cannot run here (pack.sh's stub is for another Python, or no libpython$VER.so): $MISSING"; SERVERS=tritium; }
export TRITIUM_COMMIT=$(cat "$P/commit" 2>/dev/null || echo unknown)
case $BENCH in
  many-core) EXTRA=(--servers "$SERVERS" --json "$OUT/many-core.json") ;;
  sequence | bls-overhead) EXTRA=(--servers "$SERVERS") ;;
  *) EXTRA=() ;;
esac
log "bench/$BENCH.mjs"
node "bench/$BENCH.mjs" "${EXTRA[@]}" "$@" 2>&1 | tee "$OUT/$BENCH.txt"
rc=${PIPESTATUS[0]}
log "end (exit $rc)"; rm -rf "$D"; exit "$rc"
