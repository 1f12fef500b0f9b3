# REQUIRES: ptxas
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %S/../../scripts/make_wheel.py %S/../../python-bindings/attnfuse %attnfuse_lib_dir/libAttnFuseCAPI.so %t/dist --version 0.0.0+test | FileCheck %s --check-prefix=WHEEL
# RUN: %python -m pip install --quiet --no-deps --no-index --disable-pip-version-check --target %t/site %t/dist/attnfuse-0.0.0+test-py3-none-linux_x86_64.whl
# RUN: env -u ATTNFUSE_CAPI_LIBRARY PYTHONPATH=%t/site ATTNFUSE_CACHE_DIR=%t/cache %python %s %t/site | FileCheck %s
# scripts/make_wheel.py (scripts/build-wheel.sh's last step): a wheel that
# pip installs, whose package loads the C API library inside it and
# compiles attention kernels.
# WHEEL: attnfuse-0.0.0+test-py3-none-linux_x86_64.whl
import os
import sys

import attnfuse
from attnfuse.attention_kernels import AttentionConfig, get_kernels

site = os.path.realpath(sys.argv[1])
print("package from the wheel:",
      os.path.realpath(attnfuse.__file__).startswith(site))
print("library from the wheel:",
      os.path.realpath(attnfuse.library_path) ==
      os.path.join(site, "attnfuse", "libAttnFuseCAPI.so"))
# CHECK: package from the wheel: True
# CHECK: library from the wheel: True
cfg = AttentionConfig(dtype="bf16", batch=1, heads_q=2, heads_kv=2,
                      seq_q=64, seq_k=64, head_dim_qk=64, head_dim_v=64)
print([k.name for k in get_kernels(cfg, "backward")])
# CHECK: ['attn_fwd_0_bwd_pre', 'attn_fwd_0_bwd', 'attn_fwd_0_bwd_dq']
import importlib.metadata as md
print("installed", md.version("attnfuse"))
# CHECK: installed 0.0.0+test
