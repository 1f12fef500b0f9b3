// The sm_90a instruction family (mma=wgmma): kernel structure (a producer
// warpgroup filling a ring of K/V stages under mbarriers, consumer
// warpgroups with wgmma from swizzled shared memory for S and with P from
// registers for O, accumulators tied through wgmma.wait_group), its
// option errors, the fallback remarks, and the PTX of the first kernel
// (ptxas: no spills, no warnings; the other defaults: wgmma-no-spills.mlir).
// The producer loads by TMA: the host creates a tensor map per operand
// (upstream's nvgpu.tma.create.descriptor), the kernel takes pointers to
// them; with tma=false by cp.async.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma" -split-input-file -verify-diagnostics | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma warps=12 stages=3 block-k=32" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=W12
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma warps=4" -split-input-file 2>&1 | FileCheck %s --check-prefix=W4
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma block-q=64" -split-input-file 2>&1 | FileCheck %s --check-prefix=BQ
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma block-k=24" -split-input-file 2>&1 | FileCheck %s --check-prefix=BK
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma chunk=64" -split-input-file 2>&1 | FileCheck %s --check-prefix=CHUNK
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma stages=1" -split-input-file 2>&1 | FileCheck %s --check-prefix=S1
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma chip=sm_80" -split-input-file 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma tma=false" -split-input-file | FileCheck %s --check-prefix=CPASYNC
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa mma=wgmma" -split-input-file -o %t.mlir 2>/dev/null
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma" -split-input-file -o %t.stage1.mlir 2>/dev/null
// RUN: %python %S/../../../bench/extract_kernels.py %t.stage1.mlir %t.mlir %t
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// W4: mma=wgmma takes warps 8 or 12 (2 or 3 warpgroups), not 4
// BQ: mma=wgmma with 8 warps takes block-q 128 (64 rows per warpgroup), not 64
// BK: mma=wgmma takes a block-k that is a multiple of 16 up to 256, not 24
// CHUNK: mma=wgmma takes chunk = block-k, not 64
// S1: mma=wgmma takes 2 to 4 stages, not 1
// Another chip: the family falls back, with a remark.
// SM80: remark: convert-attn-to-gpu: mma=wgmma falls back to mma_sync: wgmma needs sm_90a, the target is sm_80
// SM80: attn.family = "mma_sync"

// A producer warpgroup and two consumer warpgroups of 64 rows, 128-key
// blocks at d = 128; dynamic shared memory: 1024 (alignment) + 2 Q buffers
// (a persistent grid) of 128 x 256 bytes + 2 stages x (K, V) 128 x 256
// bytes + O's staging tile 128 x 256 bytes + 12 mbarriers = 230496.
// Causal: heads fastest, longest query blocks first. The consumers issue S
// of block j with P V of block j - 1 (their turn taken on named barriers,
// ping-pong), wait for S alone (wait_group 1), then for P V.
// Tensor maps: a box is a 128-byte panel (64 elements) of 128 rows (Q's
// tile, a K or V block), in the 128-byte swizzle wgmma reads; K and V are
// GQA's 2 heads. One producer thread issues the copies; a full barrier
// takes its one arrive.expect_tx (of the tile's bytes) and completes on the
// bytes.
// CHECK-LABEL: func.func @causal_gqa
// CHECK:       nvgpu.tma.create.descriptor %{{.+}} box[%c1, %c1{{.*}}, %c128, %c64] : memref<*xbf16> -> <tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
// CHECK:       builtin.unrealized_conversion_cast %{{.+}} : !nvgpu.tensormap.descriptor<{{.+}}> to !llvm.ptr
// CHECK-COUNT-3: nvgpu.tma.create.descriptor
// CHECK:       gpu.launch_func  @attn_kernels::@attn_fwd_0 {{.*}} args({{.*}} : memref<1x8x1024x128xbf16>, %{{.+}} : memref<1x8x1024xf32>, %{{.+}} : !llvm.ptr, %{{.+}} : !llvm.ptr, %{{.+}} : !llvm.ptr, %{{.+}} : !llvm.ptr)
// CHECK:       gpu.func @attn_fwd_0(
// CHECK-SAME:    attn.args = ["q", "k", "v", "o", "lse", "tmap_q", "tmap_k", "tmap_v", "tmap_o"], attn.block = array<i64: 384, 1, 1>, attn.config = array<i64: 128, 128, 1, 128>, attn.dynamic_shared = 230496 : i64, attn.family = "wgmma", attn.grid = array<i64: 64, 1, 1>
// CHECK-SAME:    attn.tensor_maps = [{argument = 5 : i64, box = array<i64: 1, 1, 128, 64>, l2_promotion = 256 : i64, source = 0 : i64, swizzle = 128 : i64}, {argument = 6 : i64, {{.*}} source = 1 : i64{{.*}}}, {argument = 7 : i64, {{.*}} source = 2 : i64{{.*}}}, {argument = 8 : i64, box = array<i64: 1, 1, 64, 64>, l2_promotion = 256 : i64, source = 3 : i64, swizzle = 128 : i64}]
// CHECK:         memref.extract_aligned_pointer_as_index
// CHECK:         nvvm.mbarrier.init %{{.+}}, %c1_i32
// CHECK:         nvvm.fence.mbarrier.init
// CHECK:         gpu.barrier
// CHECK:         gpu.shuffle  idx
// CHECK:         scf.if
// CHECK-NEXT:      nvvm.setmaxregister  decrease 40
// CHECK:           scf.if
// CHECK-COUNT-3:     nvvm.prefetch tensormap
// CHECK:             nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c32768_i32
// CHECK-COUNT-2:     llvm.inline_asm has_side_effects {{.*}} "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK:             scf.for
// CHECK:               nvvm.mbarrier.try_wait.parity
// CHECK:               nvvm.mbarrier.arrive.expect_tx
// CHECK-COUNT-2:       llvm.inline_asm has_side_effects {{.*}} "cp.async.bulk.tensor.4d
// CHECK-NOT:       nvgpu.device_async_copy
// CHECK:           nvvm.setmaxregister  increase 232
// The matrix descriptors' fields besides the address (PTX ISA, "Matrix
// Descriptor Format"): 128-byte swizzle (mode 1 << 62), 8 rows x 128 bytes
// between row groups (64 << 32); K-major Q and K: leading offset unused
// (1 << 16); N-major V: one 128-key panel, 128 x 128 bytes (1024 << 16).
// CHECK-DAG:       arith.constant 4611686293305360384 : i64
// CHECK-DAG:       arith.constant 4611686293372403712 : i64
// CHECK:           nvvm.barrier.arrive
// Whether the CTA has a key block: signed (the range's end can be negative).
// CHECK:           arith.cmpi slt
// CHECK-NEXT:      scf.if
// CHECK:             nvvm.mbarrier.try_wait.parity
// CHECK-NOT:         nvvm.fence.proxy
// CHECK:             nvvm.barrier id = 
// CHECK:             nvvm.wgmma.fence.aligned
// CHECK-COUNT-8:     nvvm.wgmma.mma_async {{.*}}<m = 64, n = 128, k = 16>
// CHECK:             nvvm.wgmma.commit.group.sync.aligned
// CHECK:             nvvm.barrier.arrive
// CHECK:             "wgmma.wait_group.sync.aligned 0;"
// CHECK:           scf.for
// CHECK:             nvvm.mbarrier.try_wait.parity
// CHECK:             nvvm.barrier id = 
// CHECK:             nvvm.wgmma.fence.aligned
// CHECK-COUNT-8:     nvvm.wgmma.mma_async {{.*}}<m = 64, n = 128, k = 16>
// CHECK:             nvvm.wgmma.commit.group.sync.aligned
// CHECK:             nvvm.mbarrier.try_wait.parity
// CHECK-COUNT-8:     wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// CHECK:             nvvm.wgmma.commit.group.sync.aligned
// CHECK:             nvvm.barrier.arrive
// CHECK:             "wgmma.wait_group.sync.aligned 1;"
// CHECK:             nvvm.mbarrier.arrive
// CHECK:             "wgmma.wait_group.sync.aligned 0;"
// CHECK:             nvvm.mbarrier.arrive
// The epilogue through shared memory: the warpgroup's first thread waits
// until the last tile's store has read the staging rows, the warpgroup
// (named barrier 3 or 4, 128 threads) writes O's pairs there, fences them
// for the async proxy, and the first thread issues one TMA store per
// 128-byte panel of its 64 rows; the last stores complete before the end.
// CHECK:           nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK:           nvvm.barrier id = %{{.+}} number_of_threads = %c128_i32{{.*}}
// CHECK:           vector.store %{{.+}}, %{{.+}} : memref<{{[0-9]+}}xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK:           nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK:           nvvm.barrier id = %{{.+}} number_of_threads = %c128_i32{{.*}}
// CHECK-COUNT-2:   "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [$0, {$1, $2, $3, $4}], [$5];"
// CHECK:           nvvm.cp.async.bulk.commit.group
// CHECK:         nvvm.cp.async.bulk.wait_group 0{{$}}
// W12: attn.block = array<i64: 512, 1, 1>, attn.config = array<i64: 192, 32, 1, 32>
// With tma=false: the producer warpgroup's cp.async, each copy arriving on
// the full barrier as it lands (128 arrivals); the consumers order the
// copies (generic proxy) before wgmma's reads.
// CPASYNC-LABEL: func.func @causal_gqa
// CPASYNC-NOT:   nvgpu.tma.create.descriptor
// CPASYNC:       nvvm.mbarrier.init %{{.+}}, %c128_i32
// CPASYNC:       nvvm.setmaxregister  decrease 40
// CPASYNC:       nvgpu.device_async_copy
// CPASYNC:       nvvm.cp.async.mbarrier.arrive {{.*}} {noinc = true}
// CPASYNC:       scf.for
// CPASYNC:         nvvm.mbarrier.try_wait.parity
// CPASYNC:         nvgpu.device_async_copy
// CPASYNC:       nvvm.cp.async.wait.group 0
// CPASYNC:       nvvm.setmaxregister  increase 232
// CPASYNC:       nvvm.mbarrier.try_wait.parity
// CPASYNC-NEXT:  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// PTX: .entry attn_fwd_0(
// PTX: .maxntid 384, 1, 1
// PTX: setmaxnreg.inc.sync.aligned.u32 {{[[:space:]]*}}232;
// PTX: mbarrier.try_wait.parity
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX: cp.async.bulk.tensor.4d.global.shared::cta.bulk_group
// PTX: setmaxnreg.dec.sync.aligned.u32 {{[[:space:]]*}}40;
// PTX: prefetch.tensormap
// PTX: mbarrier.arrive.expect_tx.shared.b64
// PTX: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTXAS-NOT: warning
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// The CTA's register pool is 168 x 384 (setmaxnreg's split needs exactly it).
// PTXAS-NEXT: Used 168 registers
// PTXAS-NOT: warning
func.func @causal_gqa(%q: tensor<1x8x1024x128xbf16>, %k: tensor<1x2x1024x128xbf16>, %v: tensor<1x2x1024x128xbf16>) -> (tensor<1x8x1024x128xbf16>, tensor<1x8x1024xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x8x1024x128xbf16>, tensor<1x2x1024x128xbf16>, tensor<1x2x1024x128xbf16>) {mask = #attn.mask<causal>} -> tensor<1x8x1024x128xbf16>, tensor<1x8x1024xf32>
  return %o, %lse : tensor<1x8x1024x128xbf16>, tensor<1x8x1024xf32>
}

// -----

// d = 64: three consumer warpgroups (192 rows, 3 x 32 + 128 = 512 threads),
// S of 128 keys (n = 128), O of n = 64.
// CHECK-LABEL: func.func @plain_d64
// CHECK: attn.block = array<i64: 512, 1, 1>, attn.config = array<i64: 192, 128, 1, 128>
// CHECK: nvvm.setmaxregister  decrease 32
// CHECK: nvvm.setmaxregister  increase 160
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}}<m = 64, n = 128, k = 16>
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
func.func @plain_d64(%q: tensor<2x16x2048x64xf16>, %k: tensor<2x16x2048x64xf16>, %v: tensor<2x16x2048x64xf16>) -> tensor<2x16x2048x64xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<2x16x2048x64xf16>, tensor<2x16x2048x64xf16>, tensor<2x16x2048x64xf16>) -> tensor<2x16x2048x64xf16>
  return %o : tensor<2x16x2048x64xf16>
}

// -----

// d = 256: 64-key blocks; Stable Diffusion's d = 40 is padded to 48 (32-byte
// swizzle panels).
// CHECK-LABEL: func.func @d256
// CHECK: attn.config = array<i64: 128, 64, 1, 64>
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
func.func @d256(%q: tensor<1x8x512x256xbf16>, %k: tensor<1x8x512x256xbf16>, %v: tensor<1x8x512x256xbf16>) -> tensor<1x8x512x256xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x8x512x256xbf16>, tensor<1x8x512x256xbf16>, tensor<1x8x512x256xbf16>) -> tensor<1x8x512x256xbf16>
  return %o : tensor<1x8x512x256xbf16>
}

// -----

// One CTA per tile (d = 256 from 2k queries): O is staged in the Q buffer
// (no room beside two K/V stages, and Q is not loaded again), so the
// shared memory is that of the inputs alone, and O goes by TMA stores.
// CHECK-LABEL: func.func @d256_one_cta_per_tile
// CHECK: attn.args = ["q", "k", "v", "o", "lse", "tmap_q", "tmap_k", "tmap_v", "tmap_o"]{{.*}}attn.dynamic_shared = 197712 : i64{{.*}}attn.grid = array<i64: 256, 1, 1>
// CHECK: "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group
func.func @d256_one_cta_per_tile(%q: tensor<1x8x4096x256xbf16>, %k: tensor<1x8x4096x256xbf16>, %v: tensor<1x8x4096x256xbf16>) -> tensor<1x8x4096x256xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x8x4096x256xbf16>, tensor<1x8x4096x256xbf16>, tensor<1x8x4096x256xbf16>) -> tensor<1x8x4096x256xbf16>
  return %o : tensor<1x8x4096x256xbf16>
}

// -----

// CHECK-LABEL: func.func @sd_d40
// CHECK: attn.family = "wgmma"
// CHECK: wgmma.mma_async.sync.aligned.m64n48k16.f32.f16.f16
func.func @sd_d40(%q: tensor<2x8x4096x40xf16>, %k: tensor<2x8x77x40xf16>, %v: tensor<2x8x77x40xf16>) -> tensor<2x8x4096x40xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<2x8x4096x40xf16>, tensor<2x8x77x40xf16>, tensor<2x8x77x40xf16>) -> tensor<2x8x4096x40xf16>
  return %o : tensor<2x8x4096x40xf16>
}

// -----

// What the family cannot compute goes to mma_sync, and on to simt, with a
// remark each.
// CHECK-LABEL: func.func @f32
// CHECK: attn.family = "simt"
func.func @f32(%q: tensor<1x2x64x64xf32>, %k: tensor<1x2x64x64xf32>, %v: tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32> {
  // expected-remark @+2 {{convert-attn-to-gpu: mma=wgmma falls back to mma_sync: element type is not bf16/f16}}
  // expected-remark @+1 {{convert-attn-to-gpu: mma=mma_sync falls back to simt: element type is not bf16/f16}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32>
  return %o : tensor<1x2x64x64xf32>
}
