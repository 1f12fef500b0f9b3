//===- AttnOps.cpp - attn.attention verification and helpers --------------===//
#include "attnfuse/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/Builders.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace attnfuse::attn;

#define GET_OP_CLASSES
#include "attnfuse/Dialect/Attn/IR/AttnOps.cpp.inc"

float AttentionOp::getScaleOrDefault() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToFloat();
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(getHeadDimQK())));
}

AttentionOp::Window AttentionOp::getMaskWindow() {
  constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  int64_t offset = getAlignment() == MaskAlignment::bottom_right
                       ? getKeyLength() - getQueryLength()
                       : 0;
  switch (getMask()) {
  case MaskKind::none:
    return {kUnbounded, kUnbounded, offset};
  case MaskKind::causal:
    return {kUnbounded, 0, offset};
  case MaskKind::sliding_window:
    return {static_cast<int64_t>(getWindowLeft().value_or(kUnbounded)),
            static_cast<int64_t>(getWindowRight().value_or(kUnbounded)),
            offset};
  }
  llvm_unreachable("unknown mask kind");
}

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

static bool isAttentionElementType(Type t) {
  return t.isF16() || t.isBF16() || t.isF32();
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << "?";
        else
          os << d;
      },
      ", ");
  os << "]";
  return s;
}

/// Checks that `type` broadcasts to `target` with numpy's rules.
static LogicalResult verifyBroadcastable(AttentionOp op, StringRef name,
                                         RankedTensorType type,
                                         ArrayRef<int64_t> target) {
  int64_t rank = type.getRank();
  if (rank > static_cast<int64_t>(target.size()))
    return op.emitOpError() << name << " must have rank at most "
                            << target.size() << ", got rank " << rank;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t dim = type.getDimSize(i);
    int64_t want = target[target.size() - rank + i];
    if (ShapedType::isDynamic(dim))
      return op.emitOpError() << name << " must have a static shape";
    if (dim != 1 && dim != want)
      return op.emitOpError()
             << name << " of shape " << shapeString(type.getShape())
             << " does not broadcast to [B, Hq, Nq, Nk] = "
             << shapeString(target) << " (dimension " << i << " is " << dim
             << ", expected 1 or " << want << ")";
  }
  return success();
}

LogicalResult AttentionOp::verify() {
  struct Named {
    StringRef name, layout;
    RankedTensorType type;
  };
  Named inputs[] = {{"query", "[B, Hq, Nq, Dqk]", getQueryType()},
                    {"key", "[B, Hkv, Nk, Dqk]", getKeyType()},
                    {"value", "[B, Hkv, Nk, Dv]", getValueType()}};
  for (const Named &in : inputs) {
    if (in.type.getRank() != 4)
      return emitOpError() << in.name << " must have rank 4 " << in.layout
                           << ", got rank " << in.type.getRank();
    if (!in.type.hasStaticShape())
      return emitOpError() << in.name << " must have a static shape, got "
                           << in.type << " (dynamic shapes are not supported)";
    if (!isAttentionElementType(in.type.getElementType()))
      return emitOpError() << in.name
                           << " element type must be f16, bf16 or f32, got "
                           << in.type.getElementType();
  }
  Type elementType = getQueryType().getElementType();
  if (getKeyType().getElementType() != elementType ||
      getValueType().getElementType() != elementType)
    return emitOpError() << "query, key and value must have the same element "
                            "type, got "
                         << elementType << ", "
                         << getKeyType().getElementType() << " and "
                         << getValueType().getElementType();

  ArrayRef<int64_t> q = getQueryType().getShape();
  ArrayRef<int64_t> k = getKeyType().getShape();
  ArrayRef<int64_t> v = getValueType().getShape();
  if (k[0] != q[0] || v[0] != q[0])
    return emitOpError() << "batch sizes differ: query " << q[0] << ", key "
                         << k[0] << ", value " << v[0];
  if (k[1] != v[1])
    return emitOpError() << "key and value must have the same number of "
                            "heads, got "
                         << k[1] << " and " << v[1];
  if (k[2] != v[2])
    return emitOpError() << "key and value must have the same sequence "
                            "length, got "
                         << k[2] << " and " << v[2];
  if (k[3] != q[3])
    return emitOpError() << "query and key head dimensions differ: " << q[3]
                         << " and " << k[3];
  for (int64_t i = 0; i < 4; ++i)
    if (q[i] <= 0 || k[i] <= 0 || v[i] <= 0)
      return emitOpError() << "query, key and value dimensions must be "
                              "positive";
  if (q[1] % k[1] != 0)
    return emitOpError() << "number of query heads (" << q[1]
                         << ") must be a multiple of the number of key/value "
                            "heads ("
                         << k[1] << ")";

  // Results.
  auto outType = cast<RankedTensorType>(getOutput().getType());
  SmallVector<int64_t> outShape = {q[0], q[1], q[2], v[3]};
  if (outType.getShape() != ArrayRef<int64_t>(outShape) ||
      outType.getElementType() != elementType)
    return emitOpError() << "output must be "
                         << RankedTensorType::get(outShape, elementType)
                         << " ([B, Hq, Nq, Dv] in the query's element type), "
                            "got "
                         << outType;
  if (Value lse = getLse()) {
    auto lseType = cast<RankedTensorType>(lse.getType());
    SmallVector<int64_t> lseShape = {q[0], q[1], q[2]};
    Type f32 = Float32Type::get(getContext());
    if (lseType.getShape() != ArrayRef<int64_t>(lseShape) ||
        lseType.getElementType() != f32)
      return emitOpError() << "lse must be "
                           << RankedTensorType::get(lseShape, f32)
                           << " ([B, Hq, Nq] in f32), got " << lseType;
  }

  // Bias and keep mask.
  SmallVector<int64_t> scoreShape = {q[0], q[1], q[2], k[2]};
  if (Value bias = getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (!isa<FloatType>(biasType.getElementType()))
      return emitOpError() << "bias element type must be a float type, got "
                           << biasType.getElementType();
    if (failed(verifyBroadcastable(*this, "bias", biasType, scoreShape)))
      return failure();
  }
  if (Value keep = getKeepMask()) {
    auto keepType = cast<RankedTensorType>(keep.getType());
    if (!keepType.getElementType().isInteger(1))
      return emitOpError() << "keep_mask element type must be i1, got "
                           << keepType.getElementType();
    if (failed(verifyBroadcastable(*this, "keep_mask", keepType, scoreShape)))
      return failure();
  }

  // Scale.
  if (std::optional<APFloat> scale = getScale())
    if (!scale->isFinite())
      return emitOpError() << "scale must be finite";

  // Structural mask.
  bool isWindow = getMask() == MaskKind::sliding_window;
  if (!isWindow && (getWindowLeft() || getWindowRight()))
    return emitOpError() << "window_left and window_right require mask = "
                            "#attn.mask<sliding_window>";
  if (isWindow) {
    if (!getWindowLeft() || !getWindowRight())
      return emitOpError() << "a sliding_window mask requires both "
                              "window_left and window_right";
    if (static_cast<int64_t>(*getWindowLeft()) < 0 ||
        static_cast<int64_t>(*getWindowRight()) < 0)
      return emitOpError() << "window bounds must be non-negative, got "
                              "window_left = "
                           << static_cast<int64_t>(*getWindowLeft())
                           << ", window_right = "
                           << static_cast<int64_t>(*getWindowRight());
  }
  if (getMask() == MaskKind::none &&
      getAlignment() == MaskAlignment::bottom_right)
    return emitOpError() << "alignment = #attn.alignment<bottom_right> "
                            "requires a causal or sliding_window mask";

  // Dropout.
  double p = getDropoutP().convertToDouble();
  if (!(p >= 0.0 && p < 1.0))
    return emitOpError() << "dropout_p must be in [0, 1), got " << p;
  if (p > 0.0 && !getSeed())
    return emitOpError() << "dropout_p > 0 requires a seed operand";
  if (p == 0.0 && getSeed())
    return emitOpError() << "a seed operand requires dropout_p > 0";
  return success();
}

LogicalResult AttentionOp::verifyRegions() {
  Region &region = getScoreMod();
  if (region.empty())
    return success();
  if (!region.hasOneBlock())
    return emitOpError() << "score_mod region must have exactly one block";
  Block &block = region.front();
  MLIRContext *ctx = getContext();
  Type f32 = Float32Type::get(ctx), index = IndexType::get(ctx);
  SmallVector<Type> expected = {f32, index, index, index, index};
  if (block.getArgumentTypes() != TypeRange(expected))
    return emitOpError() << "score_mod region must take (score: f32, b: "
                            "index, h: index, q: index, k: index)";
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield || yield.getValues().size() != 1 ||
      yield.getValues().front().getType() != f32)
    return emitOpError() << "score_mod region must end with attn.yield of "
                            "one f32 value";
  for (Operation &op : block.without_terminator()) {
    if (!isMemoryEffectFree(&op))
      return op.emitOpError()
             << "inside a score_mod region must be free of memory effects";
  }
  return success();
}
