// What the mma_sync backward does not compute yet goes to simt, with a
// remark that says why (never a wrong kernel): f32, head dims that are not
// multiples of 16, above 128 and not multiples of 32, above 256 (bias,
// keep mask, dropout and score_mod it computes:
// backward-mma-sync-features.mlir; head dims 192/128 and 256:
// backward-mma-sync-head-dims.mlir).
// RUN: attnfuse-opt %s -split-input-file --convert-attn-to-gpu="mma=mma_sync" -verify-diagnostics -o /dev/null
// RUN: attnfuse-opt %s -split-input-file --convert-attn-to-gpu="mma=mma_sync" 2>/dev/null | FileCheck %s --check-prefix=IR

// IR-COUNT-3: gpu.func @attn_fwd_0_bwd({{.*}}attn.family = "simt"
// IR-NOT: attn.family = "mma_sync"

func.func @f32(%q: tensor<1x1x64x64xf32>, %o: tensor<1x1x64x64xf32>, %lse: tensor<1x1x64xf32>)
    -> (tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>) {
  // expected-remark@+1 {{mma=mma_sync falls back to simt: its backward takes bf16/f16 only}}
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %q, %q : tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>)
      grad(%o, %lse, %o : tensor<1x1x64x64xf32>, tensor<1x1x64xf32>, tensor<1x1x64x64xf32>)
      -> tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>
  return %dq, %dk, %dv : tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>
}

// -----

func.func @d144(%q: tensor<1x1x64x144xbf16>, %v: tensor<1x1x64x128xbf16>, %lse: tensor<1x1x64xf32>)
    -> (tensor<1x1x64x144xbf16>, tensor<1x1x64x144xbf16>, tensor<1x1x64x128xbf16>) {
  // expected-remark@+1 {{mma=mma_sync falls back to simt: its backward takes head dims that are multiples of 16 up to 128 or of 32 up to 256 (Dqk = 144, Dv = 128)}}
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %q, %v : tensor<1x1x64x144xbf16>, tensor<1x1x64x144xbf16>, tensor<1x1x64x128xbf16>)
      grad(%v, %lse, %v : tensor<1x1x64x128xbf16>, tensor<1x1x64xf32>, tensor<1x1x64x128xbf16>)
      -> tensor<1x1x64x144xbf16>, tensor<1x1x64x144xbf16>, tensor<1x1x64x128xbf16>
  return %dq, %dk, %dv : tensor<1x1x64x144xbf16>, tensor<1x1x64x144xbf16>, tensor<1x1x64x128xbf16>
}

// -----

func.func @d40(%q: tensor<1x1x64x40xf16>, %lse: tensor<1x1x64xf32>)
    -> (tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>) {
  // expected-remark@+1 {{mma=mma_sync falls back to simt: its backward takes head dims that are multiples of 16 up to 128 or of 32 up to 256 (Dqk = 40, Dv = 40)}}
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %q, %q : tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>)
      grad(%q, %lse, %q : tensor<1x1x64x40xf16>, tensor<1x1x64xf32>, tensor<1x1x64x40xf16>)
      -> tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>
  return %dq, %dk, %dv : tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>
}
