// The mma.sync (tensor-core) instruction family (mma=mma_sync, the default
// below sm_90a; block-q=128): kernel structure, the fallback remark, the PTX of the bf16
// d = 128 kernel (mma.sync m16n8k16, ldmatrix, cp.async) and, with ptxas, no
// spills; block-q=64 (Q fragments in registers).
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=mma_sync -split-input-file -verify-diagnostics | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync" -split-input-file -verify-diagnostics -o /dev/null
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync block-q=64" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=BQ64
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync lazy-rescale=0" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=EAGER
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync block-q=32" -split-input-file 2>&1 | FileCheck %s --check-prefix=BQ32
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=tcgen05" -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync warps=8 stages=3 block-q=256" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=W8S3
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync warps=2" -split-input-file 2>&1 | FileCheck %s --check-prefix=W2
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync stages=5" -split-input-file 2>&1 | FileCheck %s --check-prefix=S5
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync chunk=-16" -split-input-file 2>&1 | FileCheck %s --check-prefix=CHUNK
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync chunk=48" -split-input-file 2>&1 | FileCheck %s --check-prefix=CHUNK48
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="mma=mma_sync format=isa" -split-input-file -o %t.mlir 2>/dev/null
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=mma_sync -split-input-file -o %t.stage1.mlir
// RUN: %python %S/../../../bench/extract_kernels.py %t.stage1.mlir %t.mlir %t
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// BAD: unknown mma family 'tcgen05' (auto, simt, mma_sync, wgmma)
// W2: mma=mma_sync takes warps 4 or 8, not 2
// S5: mma=mma_sync takes 2 to 4 stages, not 5
// CHUNK: a chunk that is a multiple of 16 dividing block-k, not -16
// CHUNK48: a chunk that is a multiple of 16 dividing block-k, not 48
// BQ32: mma=mma_sync with 4 warps takes block-q 64 or 128 (one or two m16 tiles per warp), not 32

// 4 warps of 32 rows; causal: grid = (B * H = 8, ceil(100 / 128)), longest
// query blocks first; 32-key bf16 K/V blocks (the
// default above d = 64) in two stages of dynamic shared memory (rows padded
// to 136 elements), then the 128 Q rows: 2 * 32 * 136 * 2 bytes * (K, V) +
// 128 * 136 * 2 = 69632.
// CHECK-LABEL: func.func @causal_gqa
// CHECK:         gpu.launch_func @attn_kernels::@attn_fwd_0 blocks in ({{.*}}) threads in ({{.*}}) dynamic_shared_memory_size %{{.+}} args(
// CHECK:       gpu.func @attn_fwd_0(
// CHECK-NOT:     workgroup(
// CHECK-SAME:    kernel
// CHECK-SAME:    attn.block = array<i64: 128, 1, 1>, attn.config = array<i64: 128, 32, 1, 32>, attn.dynamic_shared = 69632 : i64, attn.family = "mma_sync", attn.grid = array<i64: 8, 1, 1>
// CHECK:         gpu.dynamic_shared_memory
// CHECK:         memref.view {{.*}} to memref<2x32x136xbf16, #gpu.address_space<workgroup>>
// CHECK:         memref.view {{.*}} to memref<2x32x136xbf16, #gpu.address_space<workgroup>>
// CHECK:         %[[QS:.+]] = memref.view {{.*}} to memref<1x128x136xbf16, #gpu.address_space<workgroup>>
// Q through shared memory (cp.async), then the first K/V block.
// CHECK-NOT:     vector.load %arg0
// CHECK:         nvgpu.device_async_copy %arg0{{.*}}, %[[QS]]{{.*}}, 8 {bypassL1}
// CHECK:         nvgpu.device_async_copy {{.*}}, 8 {bypassL1}
// CHECK:         nvgpu.device_async_wait
// CHECK:         gpu.barrier
// The key blocks every row sees whole: no per-element mask.
// CHECK:         scf.for
// CHECK:           nvgpu.device_async_copy
// Q A-fragments re-read per block by ldmatrix, K B-fragments.
// CHECK:           nvgpu.ldmatrix %[[QS]]{{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK:           nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK:           nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK-NOT:       arith.cmpi
// CHECK:           gpu.shuffle  xor
// CHECK:           gpu.shuffle  xor
// CHECK:           llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// O rescaled only when a row max of the warp changed (lazy-rescale).
// CHECK:           arith.cmpf une
// CHECK:           %[[ANY:.+]] = nvvm.vote.sync  any %{{.+}}, %{{.+}} -> i1
// CHECK:           scf.if %[[ANY]]
// CHECK-COUNT-4:     arith.mulf
// CHECK:             scf.yield
// CHECK:           } else {
// CHECK-NEXT:        scf.yield
// P rounded to bf16 in registers is the A operand of P V.
// CHECK:           arith.truncf {{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK:           nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK:           nvvm.mma.sync
// CHECK:           nvgpu.device_async_wait
// CHECK:           gpu.barrier
// The diagonal blocks (and the key tail): the per-element mask, one i32
// comparison per bound against a constant.
// CHECK:         scf.for
// CHECK:           nvvm.mma.sync
// CHECK:           arith.cmpi sle, %{{.+}}, %{{.+}} : i32
// CHECK:           arith.cmpi slt, %{{.+}}, %{{.+}} : i32
// CHECK:           arith.select
// CHECK:           gpu.shuffle  xor
// CHECK:           nvgpu.device_async_wait
// CHECK:           gpu.barrier
// CHECK:         vector.store {{.*}} : memref<2x4x100x128xbf16>, vector<2xbf16>
// CHECK:         memref.store {{.*}} : memref<2x4x100xf32>

// PTX: .entry attn_fwd_0(
// PTX-DAG: cp.async.cg.shared.global
// PTX-DAG: cp.async.wait_group 0
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-DAG: shfl.sync.bfly
// PTX-DAG: ex2.approx.ftz.f32
// (extract_kernels.py takes the first gpu.binary: the bf16 d = 128 kernel.)

// PTXAS: 0 bytes spill stores, 0 bytes spill loads

// warps=8 stages=3 block-q=256: 256 threads of two m16 tiles each (256
// query rows; by default one tile each, as 100 rows fit in one per warp),
// three K/V stages (3 * 32 * 136 * 2 * 2 = 52224 bytes) and Q (256 * 136 *
// 2 = 69632); two blocks in flight: a block is ready once at most one
// younger cp.async group is pending.
// W8S3-LABEL: func.func @causal_gqa
// W8S3:       gpu.func @attn_fwd_0(
// W8S3-SAME:    attn.block = array<i64: 256, 1, 1>, attn.config = array<i64: 256, 32, 1, 32>, attn.dynamic_shared = 121856 : i64, attn.family = "mma_sync", attn.grid = array<i64: 8, 1, 1>
// W8S3:         memref.view {{.*}} to memref<3x32x136xbf16, #gpu.address_space<workgroup>>
// W8S3-COUNT-2: nvgpu.device_async_create_group
// W8S3:         nvgpu.device_async_wait %{{.+}} {numGroups = 1 : i32}
// W8S3:         scf.for
// W8S3:           nvgpu.device_async_create_group
// W8S3:           nvgpu.device_async_wait %{{.+}} {numGroups = 1 : i32}

// lazy-rescale=0: O is rescaled after every key block, no warp vote.
// EAGER-LABEL: func.func @causal_gqa
// EAGER:         scf.for
// EAGER:           llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// EAGER-NOT:       nvvm.vote.sync
// EAGER:           nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// EAGER:         scf.for

// block-q=64: 4 warps of 16 rows (2 query blocks), K/V stages only (69632
// bytes), Q fragments straight from global memory, pairs of elements.
// BQ64-LABEL: func.func @causal_gqa
// BQ64:       gpu.func @attn_fwd_0(
// BQ64-SAME:    attn.config = array<i64: 64, 64, 1, 64>, attn.dynamic_shared = 69632 : i64, attn.family = "mma_sync", attn.grid = array<i64: 8, 2, 1>
// BQ64:         vector.load %arg0{{.*}} : memref<2x4x100x128xbf16>, vector<2xbf16>
// BQ64:         scf.for
// BQ64:           nvgpu.ldmatrix
// BQ64:           nvvm.mma.sync
func.func @causal_gqa(%q: tensor<2x4x100x128xbf16>, %k: tensor<2x2x130x128xbf16>, %v: tensor<2x2x130x128xbf16>) -> (tensor<2x4x100x128xbf16>, tensor<2x4x100xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x100x128xbf16>, tensor<2x2x130x128xbf16>, tensor<2x2x130x128xbf16>) {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>} -> tensor<2x4x100x128xbf16>, tensor<2x4x100xf32>
  return %o, %lse : tensor<2x4x100x128xbf16>, tensor<2x4x100xf32>
}

// -----

// f16, d = 64, no mask, Nk a multiple of the block: one loop, no
// per-element mask.
// CHECK-LABEL: func.func @plain_f16
// CHECK:       gpu.func @attn_fwd_0(
// CHECK-SAME:    attn.dynamic_shared = 55296 : i64, attn.family = "mma_sync"
// CHECK:         scf.for
// CHECK:           nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT:       arith.cmpi
// CHECK:           gpu.barrier
// CHECK-NOT:     scf.for
// CHECK:         gpu.return
func.func @plain_f16(%q: tensor<1x2x128x64xf16>, %k: tensor<1x2x256x64xf16>, %v: tensor<1x2x256x64xf16>) -> (tensor<1x2x128x64xf16>, tensor<1x2x128xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x128x64xf16>, tensor<1x2x256x64xf16>, tensor<1x2x256x64xf16>) -> tensor<1x2x128x64xf16>, tensor<1x2x128xf32>
  return %o, %lse : tensor<1x2x128x64xf16>, tensor<1x2x128xf32>
}

// -----

// f32 has no mma.sync m16n8k16 form: a remark and the SIMT kernel.
// CHECK-LABEL: func.func @f32_falls_back
// CHECK:       gpu.func @attn_fwd_0(
// CHECK-SAME:    workgroup(
// CHECK-SAME:    attn.family = "simt"
func.func @f32_falls_back(%q: tensor<1x2x64x64xf32>, %k: tensor<1x2x64x64xf32>, %v: tensor<1x2x64x64xf32>) -> (tensor<1x2x64x64xf32>, tensor<1x2x64xf32>) {
  // expected-remark @+1 {{mma=mma_sync falls back to simt: element type is not bf16/f16}}
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32>, tensor<1x2x64xf32>
  return %o, %lse : tensor<1x2x64x64xf32>, tensor<1x2x64xf32>
}

// -----

// Head dims that are not multiples of 8 stay on the tensor cores (element
// copies, odd-head-dims.mlir).
// CHECK-LABEL: func.func @dim_36
// CHECK:       gpu.func @attn_fwd_0(
// CHECK-SAME:    attn.family = "mma_sync"
func.func @dim_36(%q: tensor<1x2x64x36xbf16>, %k: tensor<1x2x64x36xbf16>, %v: tensor<1x2x64x36xbf16>) -> (tensor<1x2x64x36xbf16>, tensor<1x2x64xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x64x36xbf16>, tensor<1x2x64x36xbf16>, tensor<1x2x64x36xbf16>) -> tensor<1x2x64x36xbf16>, tensor<1x2x64xf32>
  return %o, %lse : tensor<1x2x64x36xbf16>, tensor<1x2x64xf32>
}

// -----

// A head dim that is a multiple of 8 but not of 16 (Stable Diffusion's 40)
// runs on the tensor cores, padded to 48: zeros in the padding columns of the
// K/V stages and of Q (8 elements: one 16-byte store per row, one row per
// thread), 3 k-steps of 16, O's padding columns not stored (5 of the 6
// n-tiles of 8 per row, for the 4 rows of a thread).
// Rows are 48 + 8 elements: 2 stages x 64 keys x 56 x 2 bytes x (K, V) + 128 Q
// rows x 56 x 2 bytes = 43008.
// CHECK-LABEL: func.func @d40_padded
// CHECK:       gpu.func @attn_fwd_0(
// CHECK-SAME:    attn.dynamic_shared = 43008 : i64, attn.family = "mma_sync"
// CHECK-COUNT-2: vector.store %{{.*}} : memref<2x64x56xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK:         vector.store %{{.*}} : memref<1x128x56xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK-COUNT-20: vector.store %{{.*}} : memref<1x2x128x40xf16>, vector<2xf16>
// CHECK-NOT:     vector.store %{{.*}} : memref<1x2x128x40xf16>, vector<2xf16>
func.func @d40_padded(%q: tensor<1x2x128x40xf16>, %k: tensor<1x2x64x40xf16>, %v: tensor<1x2x64x40xf16>) -> tensor<1x2x128x40xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x128x40xf16>, tensor<1x2x64x40xf16>, tensor<1x2x64x40xf16>) -> tensor<1x2x128x40xf16>
  return %o : tensor<1x2x128x40xf16>
}
