// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=simt -split-input-file | FileCheck %s

// The launch, the kernel's signature and its launch configuration (defaults
// for d = 64: 128 rows per CTA, 2 threads per row, 64-key f32 K/V blocks).
// CHECK-LABEL: func.func @plain
// CHECK-DAG:     %[[Q:.+]] = bufferization.to_buffer %arg0 read_only
// CHECK-DAG:     %[[O:.+]] = memref.alloc() : memref<2x4x100x64xbf16>
// CHECK-DAG:     %[[L:.+]] = memref.alloc() : memref<2x4x100xf32>
// CHECK:         gpu.launch_func @attn_kernels::@attn_fwd_0 blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%{{.+}}, %{{.+}}, %{{.+}}) args(%[[Q]] : memref<2x4x100x64xbf16>, %{{.+}} : memref<2x2x130x64xbf16>, %{{.+}} : memref<2x2x130x64xbf16>, %[[O]] : memref<2x4x100x64xbf16>, %[[L]] : memref<2x4x100xf32>)
// CHECK:         bufferization.to_tensor %[[O]] restrict writable
// CHECK:       gpu.module @attn_kernels
// CHECK:         gpu.func @attn_fwd_0(%{{.+}}: memref<2x4x100x64xbf16>, %{{.+}}: memref<2x2x130x64xbf16>, %{{.+}}: memref<2x2x130x64xbf16>, %{{.+}}: memref<2x4x100x64xbf16>, %{{.+}}: memref<2x4x100xf32>) workgroup(%[[KS:.+]] : memref<64x64xf32, #gpu.address_space<workgroup>>, %[[VS:.+]] : memref<64x64xf32, #gpu.address_space<workgroup>>) kernel
// CHECK-SAME:      attn.args = ["q", "k", "v", "o", "lse"], attn.block = array<i64: 256, 1, 1>, attn.config = array<i64: 128, 64, 2, 16>, attn.dynamic_shared = 0 : i64, attn.family = "simt", attn.grid = array<i64: 1, 8, 1>
// CHECK-SAME:      known_block_size = array<i32: 256, 1, 1>, nvvm.minctasm = 1 : i32
// GQA: the key/value head is h / G (G = 2).
// CHECK:           arith.divui %{{.+}}, %c2
// The key-block loop: K and V blocks into shared memory between barriers.
// CHECK:           scf.for
// CHECK:             gpu.barrier
// CHECK:             vector.store %{{.+}}, %[[KS]]
// CHECK:             vector.store %{{.+}}, %[[VS]]
// CHECK:             gpu.barrier
// Partial dot products of the two threads of a row are summed by a shuffle.
// CHECK:             gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32
// CHECK:             math.exp2
// CHECK:           math.log
// CHECK:           gpu.return
func.func @plain(%q: tensor<2x4x100x64xbf16>, %k: tensor<2x2x130x64xbf16>, %v: tensor<2x2x130x64xbf16>) -> tensor<2x4x100x64xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>) -> tensor<2x4x100x64xbf16>
  return %o : tensor<2x4x100x64xbf16>
}

// -----

// Causal: the key-block loop ends at the last block the diagonal reaches
// (floordiv by the 32-key blocks of d = 128); the seed is a kernel argument.
// CHECK-LABEL: func.func @causal_dropout
// CHECK:         gpu.launch_func @attn_kernels::@attn_fwd_0 {{.*}} args({{.*}}, %arg3 : i64, {{.*}})
// CHECK:       gpu.func @attn_fwd_0({{.*}}, %{{.+}}: i64, {{.*}}) workgroup
// CHECK-SAME:      attn.args = ["q", "k", "v", "seed", "o", "lse"], attn.block = array<i64: 256, 1, 1>, attn.config = array<i64: 64, 32, 4, 16>
// CHECK:         arith.floordivsi %{{.+}}, %c32
// CHECK:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step
func.func @causal_dropout(%q: tensor<1x2x256x128xf16>, %k: tensor<1x2x256x128xf16>, %v: tensor<1x2x256x128xf16>, %seed: i64) -> tensor<1x2x256x128xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>) seed(%seed) {mask = #attn.mask<causal>, dropout_p = 0.1 : f32} -> tensor<1x2x256x128xf16>
  return %o : tensor<1x2x256x128xf16>
}
