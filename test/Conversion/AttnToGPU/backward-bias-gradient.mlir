// grad_bias in the backward kernels. A bias shared by several scores
// (here [B, 1, 1, Nk], bf16) is summed into an f32 accumulator that the
// pre-pass zeroes, the backward adds to by atomics and the conversion rounds
// into dBias; a bias of the scores' shape (f32) is zeroed by the pre-pass
// and stored once per visited element, with no conversion.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=wgmma -split-input-file 2>&1 | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=mma_sync -split-input-file 2>&1 | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=simt -split-input-file 2>&1 | FileCheck %s
// Deterministic mode (the simt family) keeps the stores and refuses the
// atomics, located:
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=simt deterministic=true" -verify-diagnostics -split-input-file -o /dev/null

// CHECK-LABEL: func.func @shared_bias(
// CHECK: %[[DB:.+]] = memref.alloc() : memref<2x1x1x96xbf16>
// CHECK: %[[ACC:.+]] = memref.alloc() : memref<2x1x1x96xf32>
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd_pre {{.+}}, %[[ACC]] : memref<2x1x1x96xf32>)
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd {{.+}}, %[[ACC]] : memref<2x1x1x96xf32>)
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd_dq {{.+}}, %[[ACC]] : memref<2x1x1x96xf32>, %[[DB]] : memref<2x1x1x96xbf16>)
// CHECK-LABEL: gpu.func @attn_fwd_0_bwd_pre(
// CHECK-SAME: attn.args = ["do", "o", "di", "dq_accum", "dbias_accum"]
// CHECK-LABEL: gpu.func @attn_fwd_0_bwd(
// CHECK-SAME: attn.args = [{{.+}}"dq_accum", "dk", "dv", "dbias_accum"]
// CHECK: memref.atomic_rmw addf {{.+}} memref<2x1x1x96xf32>
// CHECK-LABEL: gpu.func @attn_fwd_0_bwd_dq(
// CHECK-SAME: attn.args = ["dq_accum", "dq", "dbias_accum", "dbias"]
func.func @shared_bias(%q: tensor<2x4x80x64xbf16>, %k: tensor<2x2x96x64xbf16>, %o: tensor<2x4x80x64xbf16>,
                       %lse: tensor<2x4x80xf32>, %bias: tensor<2x1x1x96xbf16>)
    -> tensor<2x1x1x96xbf16> {
  // expected-error @+1 {{deterministic=true cannot compute the gradient of a broadcast bias ('tensor<2x1x1x96xbf16>' for scores [B, Hq, Nq, Nk] = [2, 4, 80, 96])}}
  %dq, %dk, %dv, %db = attn.attention_backward
      ins(%q, %k, %k : tensor<2x4x80x64xbf16>, tensor<2x2x96x64xbf16>, tensor<2x2x96x64xbf16>)
      grad(%o, %lse, %o : tensor<2x4x80x64xbf16>, tensor<2x4x80xf32>, tensor<2x4x80x64xbf16>)
      bias(%bias : tensor<2x1x1x96xbf16>) {mask = #attn.mask<causal>}
      -> tensor<2x4x80x64xbf16>, tensor<2x2x96x64xbf16>, tensor<2x2x96x64xbf16>, tensor<2x1x1x96xbf16>
  return %db : tensor<2x1x1x96xbf16>
}

// -----

// CHECK-LABEL: func.func @full_bias(
// CHECK: %[[DB:.+]] = memref.alloc() : memref<1x2x80x96xf32>
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd_pre {{.+}}, %[[DB]] : memref<1x2x80x96xf32>)
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd {{.+}}, %[[DB]] : memref<1x2x80x96xf32>)
// CHECK-LABEL: gpu.func @attn_fwd_0_bwd_pre(
// CHECK-SAME: attn.args = ["do", "o", "di", "dq_accum", "dbias"]
// CHECK-LABEL: gpu.func @attn_fwd_0_bwd(
// CHECK-SAME: attn.args = [{{.+}}"dq_accum", "dk", "dv", "dbias"]
// CHECK-NOT: memref.atomic_rmw addf {{.+}} memref<1x2x80x96xf32>
// CHECK: memref.store {{.+}} memref<1x2x80x96xf32>
// CHECK-LABEL: gpu.func @attn_fwd_0_bwd_dq(
// CHECK-SAME: attn.args = ["dq_accum", "dq"]
func.func @full_bias(%q: tensor<1x2x80x64xbf16>, %k: tensor<1x2x96x64xbf16>, %o: tensor<1x2x80x64xbf16>,
                     %lse: tensor<1x2x80xf32>, %bias: tensor<1x2x80x96xf32>)
    -> tensor<1x2x80x96xf32> {
  %dq, %dk, %dv, %db = attn.attention_backward
      ins(%q, %k, %k : tensor<1x2x80x64xbf16>, tensor<1x2x96x64xbf16>, tensor<1x2x96x64xbf16>)
      grad(%o, %lse, %o : tensor<1x2x80x64xbf16>, tensor<1x2x80xf32>, tensor<1x2x80x64xbf16>)
      bias(%bias : tensor<1x2x80x96xf32>)
      -> tensor<1x2x80x64xbf16>, tensor<1x2x96x64xbf16>, tensor<1x2x96x64xbf16>, tensor<1x2x80x96xf32>
  return %db : tensor<1x2x80x96xf32>
}
