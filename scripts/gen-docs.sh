#!/usr/bin/env bash
# Regenerates the dialect and pass reference in docs/ from the ODS sources
# (the lit test docs/generated-docs-current.test fails until this is run after
# an ODS change).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build}"
cmake --build "$BUILD" --target mlir-doc
for dir in Dialects Passes; do
  mkdir -p "$ROOT/docs/$dir"
  cp "$BUILD/docs/$dir/"*.md "$ROOT/docs/$dir/"
done
