# -*- Python -*-
import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "ATTNFUSE"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attnfuse_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py",
                   "lit.site.cfg.py", "lib", "Inputs"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%attnfuse_obj_root", config.attnfuse_obj_root))
config.substitutions.append(
    ("%reference", config.python_executable + " " +
     os.path.join(config.test_source_root, "lib", "reference.py")))
config.environment["PYTHONDONTWRITEBYTECODE"] = "1"

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.attnfuse_tools_dir, config.llvm_tools_dir]
tools = ["attnfuse-opt", "attnfuse-run", "not", "count", "split-file"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# The host JIT compiles for a fixed baseline CPU in the tests (every x86-64
# CPU runs x86-64 code), so that the machine that writes the code runs what
# every other machine runs: no instruction, and no missing runtime builtin,
# that only some CPUs have. ATTNFUSE_TEST_JIT_CPU overrides it (e.g. host).
import platform
config.environment["ATTNFUSE_JIT_CPU"] = os.environ.get(
    "ATTNFUSE_TEST_JIT_CPU",
    "x86-64" if platform.machine() in ("x86_64", "AMD64") else "generic")
if platform.machine() in ("x86_64", "AMD64"):
    config.available_features.add("x86_64")
config.substitutions.append(
    ("%llvm_nm", os.path.join(config.llvm_tools_dir, "llvm-nm")))

# GPU tests need a CUDA driver and a device; they are skipped elsewhere.
if config.enable_cuda and shutil.which("nvidia-smi"):
    try:
        if subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                          timeout=30).returncode == 0:
            config.available_features.add("cuda")
    except Exception:
        pass

# The stand-in CUDA driver of test/Tools/MockCudaDriver (runs no kernel).
config.substitutions.append(
    ("%mock_cuda_dir",
     os.path.join(config.attnfuse_obj_root, "test", "Tools", "mock-cuda")))

# ptxas (CUDA toolkit) assembles generated PTX in compile-only GPU tests.
_ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
if os.path.exists(_ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", _ptxas))
