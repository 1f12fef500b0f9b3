// The wgmma family's persistent grid. By default (up to d = 128, above it up to
// 1k queries; with 3 or more key blocks and no key tail) 132 CTAs, an H100
// SXM's or H200's SMs, each walking the tiles (query block, batch * head) in
// rounds of the grid's size (a snake: even rounds in block order, odd ones
// reversed), with the K/V ring position carried across tiles. Two Q buffers
// (tile r's is r mod 2; their full mbarriers first, their empty ones last, 256
// = two warpgroups' threads): the consumers free a buffer once the tile's S are
// done, the producer waits for that before it loads tile r + 2's Q there, so
// that tile r + 1's loads while tile r runs. q-buffers=1: one buffer, loaded
// once the last tile's S are done.
// persistent-ctas=-1, and the default otherwise: one CTA per tile and no
// loop. The grid is x alone: 70000 heads launch.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=wgmma -split-input-file | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma persistent-ctas=-1" -split-input-file | FileCheck %s --check-prefix=ONE
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma persistent-ctas=7" -split-input-file | FileCheck %s --check-prefix=SEVEN
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma q-buffers=1" -split-input-file | FileCheck %s --check-prefix=ONEQ
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma q-buffers=3" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADQ
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma persistent-ctas=-2" -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: gpu.func @attn_fwd_0(
// CHECK-SAME:    attn.grid = array<i64: 132, 1, 1>
// CHECK-COUNT-11: nvvm.mbarrier.init %{{.+}}, %c{{1|256}}_i32
// CHECK:         nvvm.mbarrier.init %{{.+}}, %c256_i32
// CHECK-NEXT:    nvvm.fence.mbarrier.init
// The producer, causal with 8 query blocks: units of one head's query
// blocks 7 - j and j (j < 4, 9 key blocks each), unit m G + c on CTA c in
// rounds 2m (the long block) and 2m + 1 (the short one), 2048 / 2 units;
// Q into buffer r mod 2 once it is free (from round 2 on), then K/V.
// CHECK:         %[[CTA:.+]] = gpu.block_id  x
// CHECK:         %[[G:.+]] = gpu.grid_dim  x
// CHECK:         %[[ROUNDS:.+]] = arith.muli %{{.+}}, %c2
// CHECK:         scf.for %[[R:.+]] = %c0{{.*}} to %[[ROUNDS]] step %c1{{.*}} iter_args(
// CHECK:           %[[M:.+]] = arith.divui %[[R]], %c2
// CHECK:           %[[MG:.+]] = arith.muli %[[M]], %[[G]]
// CHECK:           %[[U:.+]] = arith.addi %[[MG]], %[[CTA]]
// CHECK:           arith.cmpi ult, %[[U]], %c1024
// CHECK:           scf.if %{{.+}} -> (index)
// CHECK:             %[[J:.+]] = arith.remui %[[U]], %c4
// CHECK:             arith.select %{{.+}}, %[[J]], %{{.+}}
// CHECK:             arith.divui %[[U]], %c4
// CHECK:             %[[QB:.+]] = arith.remui %[[R]], %c2
// CHECK:             arith.cmpi ult, %c1{{.*}}, %[[R]]
// CHECK:             arith.divui %[[R]], %c2
// CHECK:             nvvm.mbarrier.try_wait.parity
// CHECK:             arith.muli %[[QB]], %c32768
// CHECK:             nvvm.mbarrier.arrive.expect_tx
// The consumers.
// CHECK:         scf.for %{{.+}} = %c0{{.*}} to %{{.+}} step %c1{{.*}} iter_args(
// CHECK:           scf.if %{{.+}} -> (index)
// CHECK:             nvvm.mbarrier.try_wait.parity
// CHECK:             nvvm.wgmma.mma_async
// ONE-LABEL:     gpu.func @attn_fwd_0(
// ONE-SAME:        attn.grid = array<i64: 2048, 1, 1>
// ONE-NOT:       gpu.grid_dim
// SEVEN-LABEL:   gpu.func @attn_fwd_0(
// SEVEN-SAME:      attn.grid = array<i64: 7, 1, 1>
// ONEQ-LABEL:   gpu.func @attn_fwd_0(
// ONEQ-COUNT-9:  nvvm.mbarrier.init %{{.+}}, %c{{1|256}}_i32
// ONEQ:          nvvm.mbarrier.init %{{.+}}, %c256_i32
// ONEQ-NEXT:     nvvm.fence.mbarrier.init
// BADQ: error: 'attn.attention' op convert-attn-to-gpu: mma=wgmma takes q-buffers 1 or 2, not 3
// BAD: error: 'attn.attention' op convert-attn-to-gpu: mma=wgmma takes persistent-ctas > 0, or -1 (one CTA per tile), not -2
func.func @causal_1k(%q: tensor<16x16x1024x128xbf16>, %k: tensor<16x16x1024x128xbf16>, %v: tensor<16x16x1024x128xbf16>) -> tensor<16x16x1024x128xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<16x16x1024x128xbf16>, tensor<16x16x1024x128xbf16>, tensor<16x16x1024x128xbf16>) {mask = #attn.mask<causal>} -> tensor<16x16x1024x128xbf16>
  return %o : tensor<16x16x1024x128xbf16>
}

// -----

// Causal at 4k (32 query blocks): the units too (the K/V of a few heads in
// flight, not every head's: WgmmaEmitter::walksUnits), 32 * 16 / 2 units.
// CHECK-LABEL: gpu.func @attn_fwd_0(
// CHECK:         %[[G:.+]] = gpu.grid_dim  x
// CHECK:         %[[ROUNDS:.+]] = arith.muli %{{.+}}, %c2
// CHECK:         scf.for %[[R:.+]] = %c0{{.*}} to %[[ROUNDS]] step %c1{{.*}} iter_args(
// CHECK:           arith.divui %[[R]], %c2
// CHECK:           arith.cmpi ult, %{{.+}}, %c256
func.func @causal_4k(%q: tensor<1x16x4096x128xbf16>, %k: tensor<1x16x4096x128xbf16>, %v: tensor<1x16x4096x128xbf16>) -> tensor<1x16x4096x128xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x16x4096x128xbf16>, tensor<1x16x4096x128xbf16>, tensor<1x16x4096x128xbf16>) {mask = #attn.mask<causal>} -> tensor<1x16x4096x128xbf16>
  return %o : tensor<1x16x4096x128xbf16>
}

// -----

// But with computed scores (a score_mod; dropout alike) above 1k: every
// head's tiles longest first, in rounds of gridDim.x (a snake).
// CHECK-LABEL: gpu.func @attn_fwd_0(
// CHECK:         %[[CTA:.+]] = gpu.block_id  x
// CHECK:         %[[G:.+]] = gpu.grid_dim  x
// CHECK:         %[[ROUNDS:.+]] = arith.divui %{{.+}}, %[[G]]
// CHECK-NOT:     arith.muli %[[ROUNDS]]
// CHECK:         scf.for %[[R:.+]] = %c0{{.*}} to %[[ROUNDS]] step %c1{{.*}} iter_args(
// CHECK:           arith.select %{{.+}}, %{{.+}}, %[[CTA]]
func.func @causal_4k_softcap(%q: tensor<1x16x4096x128xbf16>, %k: tensor<1x16x4096x128xbf16>, %v: tensor<1x16x4096x128xbf16>) -> tensor<1x16x4096x128xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x16x4096x128xbf16>, tensor<1x16x4096x128xbf16>, tensor<1x16x4096x128xbf16>) {mask = #attn.mask<causal>} score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 30.0 : f32
    %x = arith.divf %s, %cap : f32
    %t = math.tanh %x : f32
    %y = arith.mulf %t, %cap : f32
    attn.yield %y : f32
  } -> tensor<1x16x4096x128xbf16>
  return %o : tensor<1x16x4096x128xbf16>
}

// -----

// Not causal: rounds of gridDim.x tiles, this CTA's tile of a round (a
// snake: CTA c takes the c-th, then the (G - 1 - c)-th), if in range.
// CHECK-LABEL: gpu.func @attn_fwd_0(
// CHECK-SAME:    attn.grid = array<i64: 132, 1, 1>
// CHECK:         %[[CTA:.+]] = gpu.block_id  x
// CHECK:         %[[G:.+]] = gpu.grid_dim  x
// CHECK:         %[[ROUNDS:.+]] = arith.divui %{{.+}}, %[[G]]
// CHECK:         scf.for %[[R:.+]] = %c0{{.*}} to %[[ROUNDS]] step %c1{{.*}} iter_args(
// CHECK:           arith.select %{{.+}}, %{{.+}}, %[[CTA]]
// CHECK:           scf.if %{{.+}} -> (index)
func.func @not_causal_1k(%q: tensor<16x16x1024x128xbf16>, %k: tensor<16x16x1024x128xbf16>, %v: tensor<16x16x1024x128xbf16>) -> tensor<16x16x1024x128xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<16x16x1024x128xbf16>, tensor<16x16x1024x128xbf16>, tensor<16x16x1024x128xbf16>) -> tensor<16x16x1024x128xbf16>
  return %o : tensor<16x16x1024x128xbf16>
}

// -----

// Above d = 128 persistent for causal-like masks up to 1k queries (one Q
// buffer: two do not fit beside the K/V stages at d = 256), one CTA per
// tile otherwise (which stages O in the Q buffer). O's staging is a slot of
// one warpgroup's 64 rows (32 KB; the whole tile does not fit): the last
// warpgroup gives the first its turn (named barrier 1 + 2 x 2 + 0 = 5);
// each waits for its turn, writes, stores, waits for the store's read and
// gives the next warpgroup its turn.
// CHECK-LABEL: gpu.func @attn_fwd_0(
// CHECK-SAME:    attn.args = [{{.*}}"tmap_o"]{{.*}}attn.dynamic_shared = 230480 : i64{{.*}}attn.grid = array<i64: 132, 1, 1>
// CHECK-COUNT-10: nvvm.mbarrier.init
// CHECK-NEXT:    nvvm.fence.mbarrier.init
// CHECK:         nvvm.setmaxregister  increase 232
// CHECK:         nvvm.barrier.arrive id = %c1_i32
// CHECK:         nvvm.barrier.arrive id = %c5_i32 number_of_threads = %c256_i32
// CHECK:         gpu.grid_dim
// CHECK:         vector.store
// CHECK:         "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group
// CHECK:         nvvm.cp.async.bulk.commit.group
// CHECK-NEXT:    nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK:         nvvm.barrier id = %{{.+}} number_of_threads = %c128_i32
// CHECK:         nvvm.barrier.arrive id = %{{.+}} number_of_threads = %c256_i32
func.func @d256_1k_causal(%q: tensor<4x8x1024x256xbf16>, %k: tensor<4x8x1024x256xbf16>, %v: tensor<4x8x1024x256xbf16>) -> tensor<4x8x1024x256xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<4x8x1024x256xbf16>, tensor<4x8x1024x256xbf16>, tensor<4x8x1024x256xbf16>) {mask = #attn.mask<causal>} -> tensor<4x8x1024x256xbf16>
  return %o : tensor<4x8x1024x256xbf16>
}

// -----

// CHECK-LABEL: gpu.func @attn_fwd_0(
// CHECK-SAME:    attn.grid = array<i64: 256, 1, 1>
// CHECK-NOT:     gpu.grid_dim
func.func @d256_1k(%q: tensor<4x8x1024x256xbf16>, %k: tensor<4x8x1024x256xbf16>, %v: tensor<4x8x1024x256xbf16>) -> tensor<4x8x1024x256xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<4x8x1024x256xbf16>, tensor<4x8x1024x256xbf16>, tensor<4x8x1024x256xbf16>) -> tensor<4x8x1024x256xbf16>
  return %o : tensor<4x8x1024x256xbf16>
}

// -----

// CHECK-LABEL: gpu.func @attn_fwd_0(
// CHECK-SAME:    attn.grid = array<i64: 64, 1, 1>
// CHECK-NOT:     gpu.grid_dim
func.func @d256_2k(%q: tensor<1x4x2048x256xbf16>, %k: tensor<1x4x2048x256xbf16>, %v: tensor<1x4x2048x256xbf16>) -> tensor<1x4x2048x256xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x4x2048x256xbf16>, tensor<1x4x2048x256xbf16>, tensor<1x4x2048x256xbf16>) -> tensor<1x4x2048x256xbf16>
  return %o : tensor<1x4x2048x256xbf16>
}

// -----

// CHECK-LABEL: gpu.func @attn_fwd_0(
// CHECK-SAME:    attn.grid = array<i64: 70000, 1, 1>
// CHECK-NOT:     gpu.grid_dim
func.func @many_heads(%q: tensor<70000x1x64x64xbf16>, %k: tensor<70000x1x64x64xbf16>, %v: tensor<70000x1x64x64xbf16>) -> tensor<70000x1x64x64xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<70000x1x64x64xbf16>, tensor<70000x1x64x64xbf16>, tensor<70000x1x64x64xbf16>) -> tensor<70000x1x64x64xbf16>
  return %o : tensor<70000x1x64x64xbf16>
}
