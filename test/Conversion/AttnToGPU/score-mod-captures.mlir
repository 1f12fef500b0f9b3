// RUN: attnfuse-opt %s -canonicalize -convert-attn-to-gpu -split-input-file -verify-diagnostics | FileCheck %s
// RUN: attnfuse-opt %s -canonicalize -attn-lower-to-nvvm-pipeline="format=isa" -split-input-file -verify-diagnostics -o /dev/null

// A region that yields a constant canonicalization hoisted above the op: the
// kernel gets its own copy.
// CHECK:     gpu.func @attn_fwd_0
// CHECK:       arith.constant 1.250000e+00 : f32
// CHECK-NOT:   attn.yield
func.func @yields_constant(%q: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>,
                          tensor<1x1x64x64xbf16>) score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 1.25 : f32
        attn.yield %c : f32
      } -> tensor<1x1x64x64xbf16>
  return %o : tensor<1x1x64x64xbf16>
}

// -----

// A scalar the region uses from above is a kernel argument (after the seed
// slot, before O and lse).
// CHECK-LABEL: func.func @captures_argument
// CHECK-SAME:    %[[CAP:[a-z0-9]+]]: f32
// CHECK:         gpu.launch_func @attn_kernels::@attn_fwd_0 {{.*}} args({{.*}}, %[[CAP]] : f32, {{.*}})
// CHECK:       gpu.func @attn_fwd_0({{.*}}, %[[ARG:[a-z0-9]+]]: f32, %{{.*}}: memref<1x1x64x64xbf16>, %{{.*}}: memref<1x1x64xf32>{{.*}})
// CHECK-SAME:    attn.args = ["q", "k", "v", "capture", "o", "lse", "tmap_q", "tmap_k", "tmap_v", "tmap_o"]
// CHECK:         arith.divf %{{.*}}, %[[ARG]] : f32
func.func @captures_argument(%q: tensor<1x1x64x64xbf16>, %cap: f32) -> tensor<1x1x64x64xbf16> {
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>,
                          tensor<1x1x64x64xbf16>) score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %x = arith.divf %s, %cap : f32
        attn.yield %x : f32
      } -> tensor<1x1x64x64xbf16>
  return %o : tensor<1x1x64x64xbf16>
}

// -----

// A tensor the region reads (a mask of an exported model, raised into
// score_mod; T5's relative-position bias, BLOOM's ALiBi) is a buffer argument
// of the kernel, read by memref.load: not a tensor constant copied into the
// kernel (which failed late, in the translation to LLVM IR).
// CHECK-LABEL: func.func @captures_constant_tensor
// CHECK:         %[[M:.+]] = bufferization.to_buffer %{{.*}} read_only : tensor<64xi1> to memref<64xi1>
// CHECK:         gpu.launch_func @attn_kernels::@attn_fwd_0 {{.*}} args({{.*}}, %[[M]] : memref<64xi1>, {{.*}})
// CHECK:       gpu.func @attn_fwd_0({{.*}}, %[[ARG:[a-z0-9]+]]: memref<64xi1>, %{{.*}}: memref<1x1x64x64xbf16>, %{{.*}}: memref<1x1x64xf32>{{.*}})
// CHECK-NOT:     tensor.extract
// CHECK:         memref.load %[[ARG]][%{{.*}}] : memref<64xi1>
func.func @captures_constant_tensor(%q: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  %m = arith.constant dense<[false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false]> : tensor<64xi1>
  %ninf = arith.constant 0xFF800000 : f32
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>,
                          tensor<1x1x64x64xbf16>) score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %keep = tensor.extract %m[%j] : tensor<64xi1>
        %x = arith.select %keep, %s, %ninf : f32
        attn.yield %x : f32
      } -> tensor<1x1x64x64xbf16>
  return %o : tensor<1x1x64x64xbf16>
}

// -----

// A tensor of dynamic shape has no static buffer type for the kernel: a
// located error.
// expected-note @+1 {{it is defined here}}
func.func @captures_dynamic_tensor(%q: tensor<1x1x64x64xbf16>, %m: tensor<?xf32>) -> tensor<1x1x64x64xbf16> {
  // expected-error @+1 {{convert-attn-to-gpu: the score_mod region uses a value of type 'tensor<?xf32>' from outside it; a kernel takes statically shaped tensors and scalars}}
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>,
                          tensor<1x1x64x64xbf16>) score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %w = tensor.extract %m[%j] : tensor<?xf32>
        %x = arith.addf %s, %w : f32
        attn.yield %x : f32
      } -> tensor<1x1x64x64xbf16>
  return %o : tensor<1x1x64x64xbf16>
}
