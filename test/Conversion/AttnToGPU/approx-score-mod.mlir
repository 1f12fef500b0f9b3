// A softcap's tanh in bf16/f16 kernels is tanh.approx.f32 and its division by
// the cap a multiplication by 1 / cap (approx-score-mod, on by default), in
// the forward and in the backward's derivative, on every family;
// approx-score-mod=false and f32 kernels keep math.tanh (libdevice's tanhf
// once lowered) and arith.divf. docs/Semantics.md states the error.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma chip=sm_90a" | FileCheck %s --check-prefixes=APPROX
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync chip=sm_80" | FileCheck %s --check-prefixes=APPROX
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=simt" | FileCheck %s --check-prefixes=APPROX
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma chip=sm_90a approx-score-mod=false" | FileCheck %s --check-prefixes=EXACT
// The whole pipeline: no libdevice call for the approximated tanh, the f32
// kernel's __nv_tanhf resolved from libdevice.
// RUN: %if ptxas %{ attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa" | FileCheck %s --check-prefixes=PTX %}

// APPROX-LABEL: gpu.func @attn_fwd_0(
// APPROX-NOT: math.tanh
// APPROX: arith.mulf %{{.*}}, %cst{{.*}} : f32
// APPROX-NOT: arith.divf %{{.*}}, %cst
// APPROX: "tanh.approx.f32 $0, $1;", "=f,f"
// APPROX-LABEL: gpu.func @attn_fwd_1_bwd(
// APPROX-NOT: math.tanh
// APPROX: "tanh.approx.f32 $0, $1;", "=f,f"
// APPROX-NOT: math.tanh
// APPROX-LABEL: gpu.func @attn_fwd_2(
// APPROX: math.tanh
// APPROX-NOT: tanh.approx
// APPROX: gpu.return

// EXACT-NOT: tanh.approx
// EXACT: arith.divf
// EXACT: math.tanh
// EXACT-NOT: tanh.approx

// PTX: tanh.approx.f32
// PTX-NOT: .extern .func __nv_tanhf

func.func @softcap(%q: tensor<1x2x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>)
    -> (tensor<1x2x128x64xbf16>, tensor<1x2x128xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>)
      {mask = #attn.mask<causal>} score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 30.0 : f32
    %x = arith.divf %s, %cap : f32
    %t = math.tanh %x : f32
    %y = arith.mulf %t, %cap : f32
    attn.yield %y : f32
  } -> tensor<1x2x128x64xbf16>, tensor<1x2x128xf32>
  return %o, %lse : tensor<1x2x128x64xbf16>, tensor<1x2x128xf32>
}

func.func @softcap_backward(%q: tensor<1x2x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>,
                            %o: tensor<1x2x128x64xbf16>, %lse: tensor<1x2x128xf32>, %do: tensor<1x2x128x64xbf16>)
    -> (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>) {
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>)
      grad(%o, %lse, %do : tensor<1x2x128x64xbf16>, tensor<1x2x128xf32>, tensor<1x2x128x64xbf16>)
      {mask = #attn.mask<causal>} score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 30.0 : f32
    %x = arith.divf %s, %cap : f32
    %t = math.tanh %x : f32
    %y = arith.mulf %t, %cap : f32
    attn.yield %y : f32
  } -> tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>
  return %dq, %dk, %dv : tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>
}

func.func @softcap_f32(%q: tensor<1x2x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>)
    -> tensor<1x2x64x32xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>)
      score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 30.0 : f32
    %x = arith.divf %s, %cap : f32
    %t = math.tanh %x : f32
    %y = arith.mulf %t, %cap : f32
    attn.yield %y : f32
  } -> tensor<1x2x64x32xf32>
  return %o : tensor<1x2x64x32xf32>
}
