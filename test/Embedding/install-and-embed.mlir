// Installs attnfuse into a fresh prefix, builds examples/embedding (a
// downstream CMake project: find_package(AttnFuse CONFIG), one C++ file)
// against it, and runs that tool's attnfuse pipeline on this file.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %cmake --install %attnfuse_obj_root --prefix %t/prefix > %t/install.log
// The generated headers and the package files are installed.
// RUN: test -f %t/prefix/include/attnfuse/Conversion/Passes.h.inc
// RUN: test -f %t/prefix/include/attnfuse/Dialect/Attn/IR/AttnOps.h.inc
// RUN: test -f %t/prefix/include/attnfuse-c/Compiler.h
// RUN: test -f %t/prefix/lib/cmake/attnfuse/AttnFuseTargets.cmake
// RUN: %cmake %example_cmake_flags -S %attnfuse_src_root/examples/embedding -B %t/build -DCMAKE_PREFIX_PATH=%t/prefix > %t/configure.log
// RUN: %cmake --build %t/build > %t/build.log
// RUN: %t/build/embed-attnfuse --attention-only %s | FileCheck %s --check-prefix=SCF
// RUN: %t/build/embed-attnfuse %s | FileCheck %s --check-prefix=CPU
// RUN: not %t/build/embed-attnfuse %s.missing 2>&1 | FileCheck %s --check-prefix=MISSING
// The raising, one chain at a time from the tool's own rewrite pattern.
// RUN: %t/build/embed-attnfuse --raise-with-patterns %attnfuse_src_root/test/Dialect/Attn/Transforms/causal_top_left.mlir | FileCheck %s --check-prefix=RAISED
// The installed tools run from the prefix (their RUNPATH finds libMLIR.so).
// RUN: %t/prefix/bin/attnfuse-opt %s --convert-attn-to-scf | FileCheck %s --check-prefix=SCF
// attnfuse-run, a stub over the installed C API library (attnfuseRunMain).
// RUN: %t/prefix/bin/attnfuse-run %s --check=none 2>&1 | FileCheck %s --check-prefix=TOOL
// The installed Python package loads the installed C API library.
// RUN: env PYTHONPATH=%t/prefix/python_packages %python -c "import attnfuse, sys; print(attnfuse.library_path); print(attnfuse.compile(open(sys.argv[1]).read(), pipeline='convert-attn-to-scf'))" %s | FileCheck %s --check-prefixes=PY,SCF

// TOOL: check=none: RAN
// PY: install-and-embed.mlir.tmp/prefix/lib/libAttnFuseCAPI.so
// SCF-LABEL: func.func @attention
// SCF-NOT:     attn.attention
// SCF:         scf.forall
// SCF:           scf.for

// CPU-LABEL: llvm.func @attention
// CPU-NOT:     attn.attention
// CPU:         llvm.call @malloc

// MISSING: could not open input file

// RAISED-LABEL: func.func @causal_top_left
// RAISED:         attn.attention
// RAISED-SAME:      mask = #attn.mask<causal>
// RAISED-NOT:     math.exp
func.func @attention(%q: tensor<1x2x64x16xf16>, %k: tensor<1x2x64x16xf16>,
                     %v: tensor<1x2x64x16xf16>) -> tensor<1x2x64x16xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x64x16xf16>,
                          tensor<1x2x64x16xf16>, tensor<1x2x64x16xf16>)
      {mask = #attn.mask<causal>}
      -> tensor<1x2x64x16xf16>
  return %o : tensor<1x2x64x16xf16>
}
