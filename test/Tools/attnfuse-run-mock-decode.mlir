// The host side of attnfuse-run --target=cuda on the stand-in driver for
// the decode step of a real export (test/Corpus/torch-linalg/
// llama_gqa_decode_eager_b1.mlir, as it is: LLaMA, batch 1, one query over
// 12 cached + 1 new keys), which was refused ("the function computes on the
// host": its one-element ops had lost their loops). Its launch plan now
// has one-thread kernels for them, before and after the fused kernel, and
// the naive reference's plan is accepted too (the mock runs no kernel: its
// zeros FAIL the check, after both plans ran).
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %S/../Corpus/torch-linalg/llama_gqa_decode_eager_b1.mlir --target=cuda --check=none --int-bound=2 2>&1 | FileCheck %s
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir not attnfuse-run %S/../Corpus/torch-linalg/llama_gqa_decode_eager_b1.mlir --target=cuda --check=fa --int-bound=2 2>&1 | FileCheck %s --check-prefix=FA

// CHECK-NOT: error
// CHECK:     mock-cuda: launch forward_kernel grid=1,1,1 block=1,1,1 shared=0
// CHECK:     mock-cuda: launch attn_fwd_0
// CHECK:     mock-cuda: launch forward_kernel grid=1,1,1 block=1,1,1 shared=0
// CHECK-NOT: error
// CHECK:     attnfuse-run: @forward check=none: RAN result0 tensor<1x1x32xf32>

// FA-NOT: error
// FA:     attnfuse-run: @forward check=fa (reference: naive lowering on the GPU): FAIL result0 tensor<1x1x32xf32>
