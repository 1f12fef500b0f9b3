// REQUIRES: ptxas
// The decode step of a real export (test/Corpus/torch-linalg/
// llama_gqa_decode_eager_b1.mlir, used as it is: LLaMA, batch 1, one query
// over 12 cached + 1 new keys). Its one-element linalg ops (the position
// `past_len + arange(1)`, the RMSNorm sums of the single token) lose their
// unit-trip loops to the canonicalizer after the tiling; their loads,
// arithmetic, stores and reduction loops stayed in the host function, which
// attnfuse-run --target=cuda refused ("the function computes on the host").
// attn-lower-to-nvvm-pipeline wraps what is left between the loop nests in
// one-iteration parallel loops: kernels of one thread. The host function is
// then allocations, views and launches only, in both paths.
// RUN: attnfuse-opt %S/../Corpus/torch-linalg/llama_gqa_decode_eager_b1.mlir --attn-lower-to-nvvm-pipeline="format=isa" --mlir-print-ir-after=gpu-kernel-outlining --mlir-elide-resource-strings-if-larger=16 -o %t 2> %t.kernels
// RUN: FileCheck %s --check-prefix=HOST < %t.kernels
// RUN: FileCheck %s --check-prefix=KERNEL < %t.kernels
// RUN: attnfuse-opt %S/../Corpus/torch-linalg/llama_gqa_decode_eager_b1.mlir --attn-lower-to-nvvm-pipeline="naive=true format=isa" --mlir-print-ir-after=gpu-kernel-outlining --mlir-elide-resource-strings-if-larger=16 -o /dev/null 2>&1 | FileCheck %s --check-prefix=HOST

// HOST-LABEL: func.func @forward(
// HOST-NOT:   memref.load
// HOST-NOT:   memref.store
// HOST-NOT:   scf.
// HOST:       return

// The position: 0 + 12, by one thread.
// KERNEL-LABEL: func.func @forward(
// KERNEL:       gpu.launch_func @[[POS:forward_kernel_[0-9]+]]::@forward_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%{{.*}} : memref<1xi64>, %{{.*}} : memref<1xi64>)
// KERNEL:       gpu.launch_func @attn_kernels::@attn_fwd_0
// A sum of squares of the token (RMSNorm), by one thread.
// KERNEL:       gpu.launch_func @{{forward_kernel_[0-9]+}}::@forward_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%{{.*}} : memref<1x1x32xf32>, %{{.*}} : memref<1x1x1xf32>)
// KERNEL:       gpu.module @[[POS]] {
// KERNEL:         memref.store %{{.*}}, %arg0[%{{.*}}] : memref<1xi64>
// KERNEL:         arith.addi %{{.*}}, %c12_i64 : i64
// KERNEL:         memref.store %{{.*}}, %arg1[%{{.*}}] : memref<1xi64>
