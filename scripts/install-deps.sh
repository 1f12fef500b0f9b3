#!/usr/bin/env bash
# Installs what attnfuse needs to build and test, idempotently: Debian's
# LLVM/MLIR 22 toolchain, Ninja, ccache, and pinned Python packages.
set -euo pipefail

DEB_PACKAGES=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22
              lld-22 ninja-build ccache cmake libzstd-dev)
missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "attnfuse: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi

PYTHON="${PYTHON:-python3}"
PY_PACKAGES=(numpy==2.1.3 ml_dtypes==0.5.1 lit==18.1.8)
if ! "$PYTHON" - "${PY_PACKAGES[@]}" <<'PY' 2>/dev/null; then
import sys
from importlib.metadata import version
for spec in sys.argv[1:]:
    name, want = spec.split("==")
    assert version(name) == want, spec
PY
  echo "attnfuse: installing Python packages: ${PY_PACKAGES[*]}"
  if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q python3-pip
  fi
  # Debian's own python3 is "externally managed" (PEP 668); pyenv's is not.
  "$PYTHON" -m pip install -q "${PY_PACKAGES[@]}" 2>/dev/null ||
    "$PYTHON" -m pip install -q --break-system-packages "${PY_PACKAGES[@]}"
fi

if [ ! -x /usr/local/cuda/bin/ptxas ] && ! command -v ptxas >/dev/null; then
  echo "attnfuse: note: no CUDA toolkit (ptxas) found; GPU parts will be skipped"
fi
