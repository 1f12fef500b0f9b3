// What the mma_sync backward does not compute yet goes to simt, with a
// remark that says why (never a wrong kernel): f32, head dims that are not
// multiples of 16 or above 128, a bias, a keep mask, dropout, a score_mod.
// RUN: attnfuse-opt %s -split-input-file --convert-attn-to-gpu="mma=mma_sync" -verify-diagnostics -o /dev/null
// RUN: attnfuse-opt %s -split-input-file --convert-attn-to-gpu="mma=mma_sync" 2>/dev/null | FileCheck %s --check-prefix=IR

// IR-COUNT-5: gpu.func @attn_fwd_0_bwd({{.*}}attn.family = "simt"
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

func.func @d192(%q: tensor<1x1x64x192xbf16>, %v: tensor<1x1x64x128xbf16>, %lse: tensor<1x1x64xf32>)
    -> (tensor<1x1x64x192xbf16>, tensor<1x1x64x192xbf16>, tensor<1x1x64x128xbf16>) {
  // expected-remark@+1 {{mma=mma_sync falls back to simt: its backward takes head dims that are multiples of 16 up to 128 (Dqk = 192, Dv = 128)}}
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %q, %v : tensor<1x1x64x192xbf16>, tensor<1x1x64x192xbf16>, tensor<1x1x64x128xbf16>)
      grad(%v, %lse, %v : tensor<1x1x64x128xbf16>, tensor<1x1x64xf32>, tensor<1x1x64x128xbf16>)
      -> tensor<1x1x64x192xbf16>, tensor<1x1x64x192xbf16>, tensor<1x1x64x128xbf16>
  return %dq, %dk, %dv : tensor<1x1x64x192xbf16>, tensor<1x1x64x192xbf16>, tensor<1x1x64x128xbf16>
}

// -----

func.func @d40(%q: tensor<1x1x64x40xf16>, %lse: tensor<1x1x64xf32>)
    -> (tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>) {
  // expected-remark@+1 {{mma=mma_sync falls back to simt: its backward takes head dims that are multiples of 16 up to 128 (Dqk = 40, Dv = 40)}}
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %q, %q : tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>)
      grad(%q, %lse, %q : tensor<1x1x64x40xf16>, tensor<1x1x64xf32>, tensor<1x1x64x40xf16>)
      -> tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>
  return %dq, %dk, %dv : tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>, tensor<1x1x64x40xf16>
}

// -----

func.func @dropout(%q: tensor<1x1x64x64xbf16>, %lse: tensor<1x1x64xf32>, %seed: i64)
    -> (tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>) {
  // expected-remark@+1 {{mma=mma_sync falls back to simt: its backward takes no dropout yet}}
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>)
      grad(%q, %lse, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64xf32>, tensor<1x1x64x64xbf16>)
      seed(%seed) {dropout_p = 0.1 : f32}
      -> tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>
  return %dq, %dk, %dv : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>
}

// -----

func.func @softcap(%q: tensor<1x1x64x64xbf16>, %lse: tensor<1x1x64xf32>)
    -> (tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>) {
  // expected-remark@+1 {{mma=mma_sync falls back to simt: its backward takes no score_mod yet}}
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>)
      grad(%q, %lse, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64xf32>, tensor<1x1x64x64xbf16>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 5.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>
  return %dq, %dk, %dv : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>
}
