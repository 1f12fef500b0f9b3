//===- KernelPlan.h - a kernel of convert-attn-to-gpu, by kind -*- C++ -*-===//
//
// What a kernel is before a family emits it: its kind (KernelKind: the
// forward, the backward pre-pass, the backward and its dQ conversion: kinds
// beside the instruction families, KernelFamily.h), its static facts
// (KernelPlan) and its arguments by role (ArgRole, KernelArgs), the one
// definition of their order that the host side (AttnToGPU.cpp) and the
// kernel bodies share. Internal to lib/Conversion/AttnToGPU.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELPLAN_H
#define ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELPLAN_H

#include "attnfuse/Conversion/AttnToGPU/AttnToGPU.h"
#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace attnfuse::gpu_kernels {
using namespace mlir;
using attn::AttentionOp;
using attn::AttentionOpInterface;
using attn::MaskWindow;

/// What a kernel computes. A family (KernelFamily) emits each kind it has
/// from its building blocks; a kind fixes the kernel's arguments
/// (getArgumentRoles).
enum class KernelKind {
  /// attn.attention: O and lse from Q, K, V (FlashAttention-2/3's forward).
  Forward,
  /// attn.attention_backward's first kernel: Di = rowsum(dO * O) (f32) and
  /// the f32 dQ accumulator zeroed, one thread per query row.
  BackwardPre,
  /// attn.attention_backward: dK and dV of a key block, dQ added to the
  /// accumulator by f32 atomics (FlashAttention-2's backward).
  Backward,
  /// attn.attention_backward's last kernel where dQ is not f32: the f32
  /// accumulator converted to dQ's element type, one thread per element.
  BackwardConvert,
  /// attn.attention_backward's last kernel in deterministic mode
  /// (cfg.deterministic): dQ of a block of query rows, each row's terms
  /// dS k_j summed over its keys in order (the Backward kind then leaves
  /// dQ out, and there is no accumulator).
  BackwardDQ,
  /// attn.attention's second kernel where the forward splits the keys
  /// (KernelPlan::kvSplits): O and lse of each query row from the splits'
  /// f32 partial (O, lse) pairs, one warp per row.
  ForwardCombine,
};

/// Whether `kind` is one of attn.attention_backward's kernels.
inline bool isBackwardKind(KernelKind kind) {
  return kind != KernelKind::Forward && kind != KernelKind::ForwardCombine;
}

/// A tensor map a kernel takes: a TMA view of its argument `source` (a
/// contiguous [B, H, N, D] buffer: Q, K, V or O) in boxes of `box` elements
/// (outermost first), written to shared memory with the swizzle of `swizzle`
/// bytes (0, 32, 64 or 128), with L2 promotion of `l2Promotion` bytes (0,
/// 64, 128 or 256); out-of-bounds elements read as zeros.
struct TensorMapSpec {
  unsigned source;
  SmallVector<int64_t, 4> box;
  int64_t swizzle, l2Promotion;
};

/// The static facts of one kernel.
struct KernelPlan {
  KernelKind kind = KernelKind::Forward;
  /// The op's score pipeline (scale, score_mod, structural mask, dropout),
  /// which attn.attention and attn.attention_backward share (the backward
  /// kinds: the attn.attention_backward).
  AttentionOpInterface op;
  /// The op's optional operands (null where absent): the bias, the keep
  /// mask and the dropout seed; the forward's per-batch key lengths
  /// (KernelArgs::sizesAt: each tile's keys, and its mask offset where the
  /// op's follows them) and block table (paged K/V [pages, Hkv, pageSize,
  /// D]: KernelArgs::keyRow, keyPageValid).
  Value bias, keepMask, seed, keyLengths, blockTable;
  /// The K/V page size with a block table (0 without).
  int64_t pageSize = 0;
  /// The backward kinds: the op has grad_bias (getBiasGradient says how
  /// the kernels write it).
  bool biasGrad = false;
  AttentionKernelOptions cfg;
  int64_t B, Hq, Hkv, Nq, Nk, D, Dv, G, numQB, numKB, threads;
  /// Bytes of shared memory a CTA can have on the target (set before a
  /// family resolves its options).
  int64_t sharedLimit = 0;
  /// The target's SMs (multiprocessorCountForChip; set before the family is
  /// selected).
  int64_t multiprocessors = 0;
  /// The forward's key splits (FlashDecoding): split s of the kvSplits
  /// CTAs of a tile (grid z) takes its share of the tile's key blocks
  /// (splitKeyBlocks, TileScheduler.h) and writes its O, normalized by its
  /// own row sums, and its lse as f32 partials (ArgRole::OPartial,
  /// LsePartial: batch index s * B + b); the ForwardCombine kernel merges
  /// them. 1: no split.
  int64_t kvSplits = 1;
  /// Packed grouped queries (the forward with pack-gqa; FlashAttention's
  /// pack_gqa): the kernel computes the op over its K/V heads (Hq = Hkv,
  /// G = 1) with Nq = G * queryPeriod rows a head, row r being query
  /// position r mod queryPeriod of query head kvh * G + r / queryPeriod (Q,
  /// O and lse viewed so, no copy). Only the structural mask reads the
  /// position (getGroupedQueryPackingBlocker): a block range covers the
  /// positions [0, queryPeriod) (queryPositions), an element's mask its
  /// row's position. 0: not packed.
  int64_t queryPeriod = 0;
  Type elementType;
  MaskWindow window;
  bool leftBounded, rightBounded;
  /// The grid's x walks (batch, head) and y the query blocks, backwards:
  /// with a causal-like mask (bounded on the right only) the last query
  /// blocks see the most keys, and this order dispatches every head's
  /// longest block before any shorter one (longest first over the whole
  /// grid; measured +7-9% at d = 128 causal on the H200). Otherwise x walks
  /// the query blocks, so that CTAs running together share K/V in L2.
  bool headsFastest;
  /// SIMT: scores need only `scale * q.k` and the masks (no score_mod, no
  /// bias), so the scale (times log2 e) is folded into q. (The mma_sync
  /// kernel folds it into exp2's FMA instead, when there are no per-element
  /// scores and the scale is positive.)
  bool foldedScale;
  /// The values the score_mod region uses from above (getScoreModCaptures:
  /// tensors it reads with tensor.extract, scalars), passed as kernel
  /// arguments.
  SmallVector<Value> captures;
  /// The tensor maps the kernel takes (KernelFamily::getTensorMaps), after
  /// its other arguments.
  SmallVector<TensorMapSpec> tensorMaps;

  /// The query positions of the kernel's rows [row0, row0 + rows) as a
  /// range [first, first + count) that holds them: the rows themselves, or
  /// with packed grouped queries the whole period.
  std::pair<int64_t, int64_t> queryPositions(int64_t row0,
                                             int64_t rows) const {
    if (queryPeriod)
      return {0, queryPeriod};
    return {row0, rows};
  }
  /// The op's query length (the structural mask's Nq).
  int64_t maskQueryLength() const { return queryPeriod ? queryPeriod : Nq; }
  /// The structural mask where every batch has all Nk keys: `window`, whose
  /// offset follows the key lengths where it is not static (bottom-right),
  /// at Nk - Nq. What the static estimates take (KernelCost).
  MaskWindow fullLengthWindow() const {
    MaskWindow w = window;
    if (!w.hasStaticOffset())
      w.offset = Nk - maskQueryLength();
    return w;
  }

  /// The bias's type where it has all four dims [B or 1, H or 1, Nq or 1,
  /// Nk or 1]; null without a bias or with a lower-rank one.
  ShapedType getFullRankBiasType() const {
    if (!bias)
      return {};
    auto type = cast<ShapedType>(bias.getType());
    return type.getRank() == 4 ? type : ShapedType();
  }
};

/// How the backward kernels write grad_bias (dT summed over the bias's
/// broadcast dimensions, in the bias's type):
/// - Store: every score element has its own bias element; the pre-pass
///   zeroes dBias (blocks the mask skips are never visited), the backward
///   stores each visited element once (deterministic).
/// - Accumulate: bias elements are shared; the pre-pass zeroes an f32
///   accumulator (dBias itself for an f32 bias), the backward adds with f32
///   atomics, and BackwardConvert rounds it to dBias (Convert).
enum class BiasGradient { None, Store, Accumulate };
BiasGradient getBiasGradient(const KernelPlan &plan);
/// Accumulate into an f32 accumulator that BackwardConvert rounds to a
/// bias of another type.
bool convertsBiasGradient(const KernelPlan &plan);

/// What a kernel argument is. The kernel takes one argument per role of
/// getArgumentRoles (one per capture), then its tensor maps.
/// The backward's: dO (GradOut), the f32 row sums Di = rowsum(dO * O), the
/// f32 dQ accumulator (DqAccum) and the results dQ, dK, dV.
enum class ArgRole {
  Q,
  K,
  V,
  Bias,
  Keep,
  Seed,
  KeyLengths,
  BlockTable,
  Capture,
  O,
  Lse,
  GradOut,
  Di,
  DqAccum,
  Dq,
  Dk,
  Dv,
  OPartial,
  LsePartial,
  DBias,
  DBiasAccum
};

/// The roles of the arguments of the kernel of `plan` before its tensor
/// maps, in order. Forward: Q, K, V, [bias], [keep], [seed],
/// [key lengths], [block table], [captures...], O, lse. BackwardPre: dO,
/// O, Di, dQ accumulator.
/// With key splits (kvSplits > 1) the forward writes O partial and lse
/// partial (f32 [kvSplits * B, Hq, Nq, Dv] and [kvSplits * B, Hq, Nq])
/// instead of O and lse, and ForwardCombine takes O partial, lse partial,
/// O, lse.
/// Backward: Q, K, V, dO, lse, Di, [bias], [keep], [seed], [captures...],
/// dQ accumulator, dK, dV. BackwardConvert: dQ accumulator, dQ. In
/// deterministic mode there is no accumulator (BackwardPre: dO, O, Di;
/// Backward: ..., dK, dV), and BackwardDQ takes Q, K, V, dO, lse, Di,
/// [bias], [keep], [seed], [captures...], dQ. With grad_bias
/// (getBiasGradient), BackwardPre and Backward end with dBias (Store) or
/// the dBias accumulator (Accumulate), and BackwardConvert with the
/// accumulator and dBias where it converts.
SmallVector<ArgRole> getArgumentRoles(const KernelPlan &plan);
/// The name of an argument of `role` (the kernel's attn.args).
StringRef getArgumentName(ArgRole role);
/// The index among the kernel's arguments of the first of `role` (the
/// kernel must have one).
unsigned getArgumentIndex(const KernelPlan &plan, ArgRole role);

/// The kernel's arguments by role (getArgumentRoles), as the kernel body
/// sees them; null where the kernel has none of a role.
struct KernelArgs {
  Value q, key, value, bias, keep, seed, keyLengths, blockTable, out, lse;
  /// The backward kinds' (see ArgRole).
  Value gradOut, di, dqAccum, dq, dk, dv, dBias, dBiasAccum;
  /// The split forward's partials (KernelPlan::kvSplits).
  Value outPartial, lsePartial;
  SmallVector<Value> captureArgs;
  /// Pointers to the tensor maps of plan.tensorMaps (128-byte CUtensorMap
  /// objects in global memory).
  SmallVector<Value> tensorMapArgs;
  /// The score_mod region's captures mapped to the kernel's values
  /// (mapCaptures), for buildMaskedScore.
  IRMapping captureMap;
  /// The key lengths and the block table as tensors (mapCaptures; null
  /// without).
  Value keyLengthsTensor, blockTableTensor;
  KernelArgs(const KernelPlan &plan, ArrayRef<BlockArgument> args);
  /// Maps each capture of `plan` to its kernel argument, a captured tensor
  /// to the tensor of its buffer (the region reads it with tensor.extract;
  /// bufferization turns the reads into loads), and views the key lengths
  /// and the block table as tensors the same way (for sizesAt, keyRow,
  /// keyPageValid). Emitted at the insertion point of `b`, once per kernel.
  void mapCaptures(const KernelPlan &plan, OpBuilder &b, Location loc);
  /// The sizes the tiles of batch `batch` (an index) see, the one
  /// description of sizes every layer reads (attn::SizeValues): the plan's
  /// static B, Nk and query length (the structural mask's:
  /// maskQueryLength), and with key lengths the batch's valid keys and,
  /// where the mask's offset follows them (bottom-right), that offset
  /// (attn::sizesAtBatch). The kernel bodies give them to every key block
  /// range, block loop, load and mask of the tile.
  attn::SizeValues sizesAt(const KernelPlan &plan, OpBuilder &b, Location loc,
                           Value batch) const;
  /// Where key position `k` of batch `batch` lives in K and V: the indices
  /// of their dims 0 and 2, (batch, k), or with paged K/V (page, slot) of
  /// attn::buildPagedPosition (a page id out of range reads page 0, and
  /// keyPageValid hides its keys).
  std::pair<Value, Value> keyRow(const KernelPlan &plan, OpBuilder &b,
                                 Location loc, Value batch, Value k) const;
  /// Whether the page of key position `k` of batch `batch` has an id in
  /// range (an i1; paged K/V only). `k` may lie past Nk (a block's tail:
  /// the last entry is read).
  Value keyPageValid(const KernelPlan &plan, OpBuilder &b, Location loc,
                     Value batch, Value k) const;
  /// The mapping for buildMaskedScore (null without captures).
  const IRMapping *getCaptures() const {
    return captureArgs.empty() ? nullptr : &captureMap;
  }
};

} // namespace attnfuse::gpu_kernels

#endif // ATTNFUSE_LIB_CONVERSION_ATTNTOGPU_KERNELPLAN_H
