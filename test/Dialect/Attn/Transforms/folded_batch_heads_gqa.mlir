// A real export (LLaMA, GQA 4/2 heads, batch 2, torch-mlir linalg): torch-mlir
// lowers each [B, H, N, D] matmul to a 3-D batch_matmul over B * H, with
// repeat_kv materialized and the [B, 1, Nq, Nk] mask broadcast over heads.
// The folded row is split back into (b, h): the op reads K and V once per
// KV head (Hkv = 2) and the mask as it is stored (no [B * H, Nq, Nk] copy).
// The same at batch 1 through ONNX, where the range of the folded row alone
// makes the reshapes cancel.
// RUN: attnfuse-opt %S/../../../Corpus/torch-linalg/llama_gqa_eager_b2.mlir --attn-raise-attention=report=none | FileCheck %s
// RUN: attnfuse-opt %S/../../../Corpus/onnx/llama_gqa_eager_b1.mlir --attn-raise-attention=report=none | FileCheck %s --check-prefix=B1
// CHECK: attn.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<2x4x11x8xf32>, tensor<2x2x11x8xf32>, tensor<2x2x11x8xf32>) bias(%{{.+}} : tensor<2x1x11x11xf32>)
// B1: attn.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<1x4x11x8xf32>, tensor<1x2x11x8xf32>, tensor<1x2x11x8xf32>) bias(%{{.+}} : tensor<1x1x11x11xf32>)
