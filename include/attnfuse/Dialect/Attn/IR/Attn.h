//===- Attn.h - the attn dialect, its attributes and operations -*- C++ -*-===//
#ifndef ATTNFUSE_DIALECT_ATTN_IR_ATTN_H
#define ATTNFUSE_DIALECT_ATTN_IR_ATTN_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

#include "attnfuse/Dialect/Attn/IR/AttnOpsDialect.h.inc"
#include "attnfuse/Dialect/Attn/IR/AttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attnfuse/Dialect/Attn/IR/AttnAttrs.h.inc"

namespace attnfuse::attn {
/// The structural mask as a window on `k - (q + offset)`:
/// `-left <= k - (q + offset) <= right`. Unbounded sides are INT64_MAX.
/// `offset` is Nk - Nq for bottom-right alignment and 0 for top-left; it is
/// ShapedType::kDynamic when it depends on a runtime length or on a batch's
/// key length (`key_lengths`; materializeSizes and sizesAtBatch give its
/// value).
struct MaskWindow {
  /// A side that hides nothing.
  static constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  /// The window of mask `none` (top-left: offset 0).
  static constexpr MaskWindow none() { return {kUnbounded, kUnbounded, 0}; }
  int64_t left, right, offset;
  bool hasStaticOffset() const { return !mlir::ShapedType::isDynamic(offset); }
};

/// The sizes of one attention problem, the one description every layer reads
/// them from (the op verifier, the lowerings, the kernel planners, the
/// raising). The batch and the sequence lengths are static or runtime
/// (ShapedType::kDynamic); head counts and head dims are always static: they
/// shape the code. Their values at a point of the IR: materializeSizes
/// (ScoreUtils.h).
///
/// `keyLength` is the number of key positions: K's dimension 2, or with paged
/// K/V (a block table [B, P]) P * pageSize, where `pageSize` is K's dimension
/// 2 (0 when K/V are not paged). Per-batch key lengths (`key_lengths`) are
/// runtime values within it (sizesAtBatch).
struct AttentionSizes {
  int64_t batch, queryHeads, kvHeads, queryLength, keyLength, headDimQK,
      headDimV, pageSize;
  /// Query heads per key/value head (G = Hq / Hkv).
  int64_t groupSize() const { return queryHeads / kvHeads; }
  /// Whether B, Nq and Nk are all known at compile time.
  bool isStatic() const {
    return !mlir::ShapedType::isDynamic(batch) &&
           !mlir::ShapedType::isDynamic(queryLength) &&
           !mlir::ShapedType::isDynamic(keyLength);
  }
};

namespace detail {
float getScaleOrDefault(std::optional<llvm::APFloat> scale, int64_t headDim);
AttentionSizes getAttentionSizes(mlir::RankedTensorType query,
                                 mlir::RankedTensorType key,
                                 mlir::RankedTensorType value,
                                 mlir::Value blockTable);
MaskWindow getMaskWindow(MaskKind kind, MaskAlignment alignment,
                         std::optional<uint64_t> left,
                         std::optional<uint64_t> right, int64_t queryLength,
                         int64_t keyLength, bool perSequenceLengths);
} // namespace detail
} // namespace attnfuse::attn

#include "attnfuse/Dialect/Attn/IR/AttnOpsInterfaces.h.inc"

#define GET_OP_CLASSES
#include "attnfuse/Dialect/Attn/IR/AttnOps.h.inc"

namespace attnfuse::attn {
/// Builds the score_mod region's function and its derivative with respect to
/// the score by forward-mode differentiation of its operations, at the
/// builder's insertion point, with (score, b, h, q, k) substituted. Returns
/// {value, d value / d score}; without a region, {score, 1}. Fails (with a
/// diagnostic at the offending operation) on an operation it cannot
/// differentiate.
mlir::FailureOr<std::pair<mlir::Value, mlir::Value>>
buildScoreModWithDerivative(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Region &scoreMod, mlir::Value score,
                            mlir::ValueRange coords);

/// The value that `v` (an operand, or the yielded value, of a score_mod
/// region) stands for at the builder's insertion point: its clone when
/// `mapping` has one; for a value defined outside the region by a scalar
/// constant (which canonicalization hoists there, the op not being isolated
/// from above), a clone of the constant, recorded in `mapping`, so that the result
/// is self-contained wherever it lands, e.g. in a GPU kernel; any other value
/// from above as it is (see getScoreModCaptures).
mlir::Value lookupOrCloneScoreModValue(mlir::OpBuilder &b, mlir::Value v,
                                       mlir::Region &scoreMod,
                                       mlir::IRMapping &mapping);

/// Clones `op` (an operation of a score_mod region) at the builder's
/// insertion point with `mapping`, after the constants from above that it or
/// its nested regions use (lookupOrCloneScoreModValue).
mlir::Operation *cloneScoreModOp(mlir::OpBuilder &b, mlir::Operation &op,
                                 mlir::IRMapping &mapping);

/// Clones the whole score_mod region at the builder's insertion point with
/// (score, b, h, q, k) substituted for its arguments and returns the value
/// it yields. `mapping` receives the clones.
mlir::Value cloneScoreMod(mlir::OpBuilder &b, mlir::Region &scoreMod,
                          mlir::Value score, mlir::ValueRange coords,
                          mlir::IRMapping &mapping);

/// The values that the score_mod region (or a region nested in it) uses from
/// outside it and that are not scalar constants (a constant tensor is one):
/// a lowering that moves the region out of the function (a GPU kernel) must
/// pass them in.
llvm::SetVector<mlir::Value> getScoreModCaptures(mlir::Region &scoreMod);

/// Checks that buildScoreModWithDerivative can differentiate `scoreMod`;
/// reports the first operation it cannot at that operation.
mlir::LogicalResult verifyDifferentiable(mlir::Region &scoreMod);
} // namespace attnfuse::attn

#endif // ATTNFUSE_DIALECT_ATTN_IR_ATTN_H
