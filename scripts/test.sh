#!/usr/bin/env bash
# Installs what is missing, builds attnfuse and runs the whole lit suite.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/build.sh" "$BUILD"
cmake --build "$BUILD" --target check-attnfuse
