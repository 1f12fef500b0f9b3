// A bf16 model (LLaMA GQA, torch-mlir linalg export) through the CPU pipeline
// with the host JIT compiling for the baseline x86-64 CPU: the numbers pass,
// and the compiled object imports nothing but what the JIT registers
// (memrefCopy, the allocation functions, abort, the 16-bit float conversion
// builtins) and what libc and libm export: no libgcc/compiler-rt builtin
// that a machine may lack (Debian 12's libgcc has no __truncsfbf2).
// REQUIRES: x86_64
// RUN: attnfuse-run %S/../Corpus/torch-linalg/llama_gqa_bf16_sdpa_b1.mlir --jit-cpu=x86-64 --int-bound=2 --check=fa --dump-object=%t.o | FileCheck %s --check-prefix=RESULT
// RUN: %python %S/Inputs/jit_imports.py %llvm_nm %t.o memrefCopy malloc aligned_alloc abort __truncsfhf2 __truncdfhf2 __truncsfbf2 __truncdfbf2 __extendhfsf2 __extendhfdf2 __extendbfsf2 | FileCheck %s
// RESULT: check=fa: PASS
// CHECK: 0 imports from nowhere else
