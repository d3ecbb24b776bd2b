#!/bin/sh
# Entrypoint of the tritium image. Flags alone run tritium with them (`docker run tritium
# --log-verbose=1 ...`); a command runs as given, so arguments written for Triton's image
# (`tritonserver --model-store=/mnt/models ...`, as KServe passes them) work unchanged.
set -e
case "${1:-}" in
  ''|-*) exec tritium "$@" ;;
  *) exec "$@" ;;
esac
