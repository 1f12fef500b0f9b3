// The host side of attnfuse-run --target=cuda on the stand-in driver for
// functions that compute more than attention, all of it as GPU kernels:
// (a) a raised [B,S,H,D] graph (test/Integration/GPU/bshd_layout_glue.mlir):
// the fused kernel reading Q, K, V in place (convert-attn-to-gpu folds the
// raising's three layout copies into it), then the output's layout copy
// fused with the residual add; (b) a whole torch-mlir export (gpt2, token ids in range):
// embeddings, norms, MLP around the fused kernel, its dense_resource weights
// uploaded as device buffers before the launches.
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %S/../Integration/GPU/bshd_layout_glue.mlir --target=cuda --check=none 2>&1 | FileCheck %s --check-prefix=GLUE
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir not attnfuse-run %S/../Integration/GPU/bshd_layout_glue.mlir --target=cuda --check=fa 2>&1 | FileCheck %s --check-prefix=GLUEFA
// RUN: env MOCK_CUDA_LOG_COPIES=1 LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %S/../Corpus/torch-linalg/gpt2_eager_b1.mlir --target=cuda --check=none --int-bound=2 2>&1 | FileCheck %s --check-prefix=GPT2

// GLUE-NOT:     mock-cuda: launch f_kernel
// GLUE:         mock-cuda: launch attn_fwd_0
// GLUE-NEXT:    mock-cuda: launch f_kernel
// GLUE-NOT:     mock-cuda: launch
// GLUE:         attnfuse-run: @f check=none: RAN result0 tensor<2x40x2x32xf32>

// The naive reference on the GPU runs too (the mock runs no kernel: FAIL).
// GLUEFA: attnfuse-run: @f check=fa (reference: naive lowering on the GPU): FAIL

// The 128x32 f32 MLP weight (16 KiB) among the uploads, then the launches.
// GPT2:     mock-cuda: copy to device 16384 bytes
// GPT2:     mock-cuda: launch forward_kernel
// GPT2:     mock-cuda: launch attn_fwd_0
// GPT2:     mock-cuda: launch forward_kernel
// GPT2-NOT: error
// GPT2:     attnfuse-run: @forward check=none: RAN result0 tensor<1x9x32xf32>
