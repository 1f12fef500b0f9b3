//===- AttnOps.cpp - attn.attention verification and helpers --------------===//
#include "attnfuse/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/Builders.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace attnfuse::attn;

#define GET_OP_CLASSES
#include "attnfuse/Dialect/Attn/IR/AttnOps.cpp.inc"

#include "attnfuse/Dialect/Attn/IR/AttnOpsInterfaces.cpp.inc"

float attnfuse::attn::detail::getScaleOrDefault(std::optional<APFloat> scale,
                                                int64_t headDim) {
  if (scale)
    return scale->convertToFloat();
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(headDim)));
}

AttentionSizes attnfuse::attn::detail::getAttentionSizes(
    RankedTensorType query, RankedTensorType key, RankedTensorType value,
    Value blockTable) {
  AttentionSizes s = {query.getDimSize(0), query.getDimSize(1),
                      key.getDimSize(1),   query.getDimSize(2),
                      key.getDimSize(2),   query.getDimSize(3),
                      value.getDimSize(3), /*pageSize=*/0};
  if (blockTable) {
    // Key position k of batch b is slot k % pageSize of page
    // blockTable[b, k / pageSize].
    s.pageSize = key.getDimSize(2);
    int64_t pages = cast<RankedTensorType>(blockTable.getType()).getDimSize(1);
    s.keyLength = ShapedType::isDynamic(pages) || ShapedType::isDynamic(s.pageSize)
                      ? ShapedType::kDynamic
                      : pages * s.pageSize;
  }
  return s;
}

MaskWindow attnfuse::attn::detail::getMaskWindow(
    MaskKind kind, MaskAlignment alignment, std::optional<uint64_t> left,
    std::optional<uint64_t> right, int64_t queryLength, int64_t keyLength,
    bool perSequenceLengths) {
  constexpr int64_t kUnbounded = MaskWindow::kUnbounded;
  int64_t offset = 0;
  if (alignment == MaskAlignment::bottom_right)
    offset = ShapedType::isDynamic(queryLength) ||
                     ShapedType::isDynamic(keyLength) || perSequenceLengths
                 ? ShapedType::kDynamic
                 : keyLength - queryLength;
  switch (kind) {
  case MaskKind::none:
    return {kUnbounded, kUnbounded, offset};
  case MaskKind::causal:
    return {kUnbounded, 0, offset};
  case MaskKind::sliding_window:
    return {static_cast<int64_t>(left.value_or(kUnbounded)),
            static_cast<int64_t>(right.value_or(kUnbounded)), offset};
  }
  llvm_unreachable("unknown mask kind");
}

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

static bool isAttentionElementType(Type t) {
  return t.isF16() || t.isBF16() || t.isF32();
}

/// A size as diagnostics print it: the number, or `?` for a runtime size.
static std::string dimString(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      shape, os, [&](int64_t d) { os << dimString(d); }, ", ");
  os << "]";
  return s;
}

/// Checks that `type` broadcasts to `target` with numpy's rules.
static LogicalResult verifyBroadcastable(Operation *op, StringRef name,
                                         RankedTensorType type,
                                         ArrayRef<int64_t> target) {
  int64_t rank = type.getRank();
  if (rank > static_cast<int64_t>(target.size()))
    return op->emitOpError() << name << " must have rank at most "
                            << target.size() << ", got rank " << rank;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t dim = type.getDimSize(i);
    int64_t want = target[target.size() - rank + i];
    // A runtime dimension stands for the runtime size it broadcasts to (it
    // is not broadcast at run time); a runtime size takes that or 1.
    if (ShapedType::isDynamic(dim) || ShapedType::isDynamic(want)) {
      if (ShapedType::isDynamic(dim) != ShapedType::isDynamic(want) &&
          dim != 1)
        return op->emitOpError()
               << name << " of shape " << shapeString(type.getShape())
               << " does not broadcast to [B, Hq, Nq, Nk] = "
               << shapeString(target) << " (dimension " << i << " is "
               << (ShapedType::isDynamic(dim) ? "runtime ('?')"
                                              : std::to_string(dim))
               << ": a runtime size takes '?' or 1, a static one its size or "
                  "1)";
      continue;
    }
    if (dim != 1 && dim != want)
      return op->emitOpError()
             << name << " of shape " << shapeString(type.getShape())
             << " does not broadcast to [B, Hq, Nq, Nk] = "
             << shapeString(target) << " (dimension " << i << " is " << dim
             << ", expected 1 or " << want << ")";
  }
  return success();
}

/// Checks an integer operand of sizes or indices (`key_lengths`, the block
/// table, the sequence offsets): i32 or i64, rank `rank`, and where `batch`
/// is given, its dimension 0 the batch (both static and equal, or both
/// runtime).
template <typename OpTy>
static LogicalResult verifyIndexTensor(OpTy op, StringRef name,
                                       StringRef layout, Value operand,
                                       int64_t rank,
                                       std::optional<int64_t> batch) {
  auto type = cast<RankedTensorType>(operand.getType());
  Type element = type.getElementType();
  if (type.getRank() != rank || !(element.isSignlessInteger(32) ||
                                  element.isSignlessInteger(64)))
    return op.emitOpError() << name << " must be a rank-" << rank
                            << " tensor of i32 or i64 " << layout << ", got "
                            << type;
  if (batch && type.getDimSize(0) != *batch)
    return op.emitOpError() << name << " must have the query's batch size "
                            << dimString(*batch) << " in dimension 0, got "
                            << type;
  return success();
}

/// Checks the offsets of packed sequences (`sequence_offsets`): both or
/// neither, [S + 1] each with the same S, batch 1, and no per-batch key
/// lengths or block table beside them.
template <typename OpTy>
static LogicalResult verifySequenceOffsets(OpTy op) {
  Value cq = op.getQueryOffsetsValue(), ck = op.getKeyOffsetsValue();
  if (!cq && !ck)
    return success();
  if (!cq || !ck)
    return op.emitOpError()
           << "sequence_offsets needs both the query and the key offsets";
  for (auto [name, offsets] : {std::pair{"query offsets", cq},
                               std::pair{"key offsets", ck}})
    if (failed(verifyIndexTensor(op, name, "[S + 1]", offsets, 1,
                                 std::nullopt)))
      return failure();
  int64_t nq = cast<RankedTensorType>(cq.getType()).getDimSize(0);
  int64_t nk = cast<RankedTensorType>(ck.getType()).getDimSize(0);
  if (nq != nk)
    return op.emitOpError() << "query and key offsets must have the same "
                               "length S + 1, got "
                            << dimString(nq) << " and " << dimString(nk);
  if (nq == 0)
    return op.emitOpError() << "sequence offsets need at least one entry "
                               "(S + 1 >= 1), got 0";
  int64_t batch = op.getQueryType().getDimSize(0);
  if (batch != 1)
    return op.emitOpError() << "packed sequences (sequence_offsets) need "
                               "batch 1, got "
                            << dimString(batch);
  if (op.getKeyLengthsValue() || op.getBlockTableValue())
    return op.emitOpError() << "sequence_offsets cannot be combined with "
                               "key_lengths or block_table";
  return success();
}

/// Checks what attn.attention and attn.attention_backward share: Q, K, V,
/// bias, keep mask, scale, structural mask and dropout.
template <typename OpTy>
static LogicalResult verifyAttentionInputs(OpTy op) {
  auto emitOpError = [&]() { return op.emitOpError(); };
  // The generated verifier checks the optional operands' segments (0 or 1
  // operand) but not the required ones; every accessor below assumes one.
  for (auto [i, name] : llvm::enumerate(OpTy::getRequiredOperandNames())) {
    unsigned length = op.getODSOperandIndexAndLength(i).second;
    if (length != 1)
      return emitOpError() << "requires exactly one '" << name
                           << "' operand (operandSegmentSizes), got " << length;
  }
  struct Named {
    StringRef name, layout;
    RankedTensorType type;
  };
  Named inputs[] = {{"query", "[B, Hq, Nq, Dqk]", op.getQueryType()},
                    {"key", "[B, Hkv, Nk, Dqk]", op.getKeyType()},
                    {"value", "[B, Hkv, Nk, Dv]", op.getValueType()}};
  for (const Named &in : inputs) {
    if (in.type.getRank() != 4)
      return emitOpError() << in.name << " must have rank 4 " << in.layout
                           << ", got rank " << in.type.getRank();
    // B and N may be runtime sizes; head counts and head dims shape the code.
    if (in.type.isDynamicDim(1) || in.type.isDynamicDim(3))
      return emitOpError() << in.name << " must have static head count and "
                              "head dim (dimensions 1 and 3), got "
                           << in.type;
    if (!isAttentionElementType(in.type.getElementType()))
      return emitOpError() << in.name
                           << " element type must be f16, bf16 or f32, got "
                           << in.type.getElementType();
  }
  Type elementType = op.getQueryType().getElementType();
  if (op.getKeyType().getElementType() != elementType ||
      op.getValueType().getElementType() != elementType)
    return emitOpError() << "query, key and value must have the same element "
                            "type, got "
                         << elementType << ", "
                         << op.getKeyType().getElementType() << " and "
                         << op.getValueType().getElementType();

  ArrayRef<int64_t> q = op.getQueryType().getShape();
  ArrayRef<int64_t> k = op.getKeyType().getShape();
  ArrayRef<int64_t> v = op.getValueType().getShape();
  // Sizes that must agree are both static and equal, or both runtime (then
  // equal at run time: the CPU lowerings check it, buildRuntimeSizeChecks).
  Value blockTable = op.getBlockTableValue();
  if (blockTable) {
    // Paged K/V: [pages, Hkv, page size, D], the batch in the block table.
    if (failed(verifyIndexTensor(op, "block_table", "[B, P]", blockTable, 2,
                                 q[0])))
      return failure();
    if (k[0] != v[0])
      return emitOpError() << "paged key and value must have the same number "
                              "of pages, got "
                           << dimString(k[0]) << " and " << dimString(v[0]);
    if (ShapedType::isDynamic(k[2]))
      return emitOpError() << "paged key and value must have a static page "
                              "size (dimension 2), got "
                           << op.getKeyType();
  } else if (k[0] != q[0] || v[0] != q[0]) {
    return emitOpError() << "batch sizes differ: query " << dimString(q[0])
                         << ", key " << dimString(k[0]) << ", value "
                         << dimString(v[0]);
  }
  if (Value lengths = op.getKeyLengthsValue())
    if (failed(verifyIndexTensor(op, "key_lengths", "[B]", lengths, 1, q[0])))
      return failure();
  if (failed(verifySequenceOffsets(op)))
    return failure();
  if (k[1] != v[1])
    return emitOpError() << "key and value must have the same number of "
                            "heads, got "
                         << k[1] << " and " << v[1];
  if (k[2] != v[2])
    return emitOpError() << "key and value must have the same sequence "
                            "length, got "
                         << dimString(k[2]) << " and " << dimString(v[2]);
  if (k[3] != q[3])
    return emitOpError() << "query and key head dimensions differ: " << q[3]
                         << " and " << k[3];
  auto nonPositive = [](int64_t d) {
    return !ShapedType::isDynamic(d) && d <= 0;
  };
  for (int64_t i = 0; i < 4; ++i)
    if (nonPositive(q[i]) || nonPositive(k[i]) || nonPositive(v[i]))
      return emitOpError() << "query, key and value dimensions must be "
                              "positive";
  // Sizes: every lowering indexes in 64 bits, and the reference lowering
  // materializes the score matrix [B, Hq, Nq, Nk] (in f64 in attnfuse-run's
  // fp64 evaluation), so each of these must have at most 2^60 elements.
  SmallVector<int64_t> scores = {q[0], q[1], q[2], op.getSizes().keyLength};
  SmallVector<int64_t> out = {q[0], q[1], q[2], v[3]};
  struct Sized {
    StringRef name;
    ArrayRef<int64_t> shape;
  };
  for (Sized t : {Sized{"query", q}, Sized{"key", k}, Sized{"value", v},
                  Sized{"output", out}, Sized{"score matrix", scores}}) {
    int64_t bytes = 8; // runtime sizes: at run time
    if (llvm::any_of(t.shape, [&](int64_t d) {
          return !ShapedType::isDynamic(d) &&
                 llvm::MulOverflow(bytes, d, bytes);
        }))
      return emitOpError() << "the " << t.name << " " << shapeString(t.shape)
                           << " has more than 2^60 elements (its size in f64 "
                              "must fit in int64)";
  }
  if (q[1] % k[1] != 0)
    return emitOpError() << "number of query heads (" << q[1]
                         << ") must be a multiple of the number of key/value "
                            "heads ("
                         << k[1] << ")";

  // Bias and keep mask.
  SmallVector<int64_t> scoreShape = {q[0], q[1], q[2],
                                     op.getSizes().keyLength};
  if (Value bias = op.getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    Type biasElement = biasType.getElementType();
    if (!isAttentionElementType(biasElement) && !biasElement.isF64())
      return emitOpError() << "bias element type must be f16, bf16, f32 or "
                              "f64, got "
                           << biasElement;
    if (failed(verifyBroadcastable(op, "bias", biasType, scoreShape)))
      return failure();
  }
  if (Value keep = op.getKeepMask()) {
    auto keepType = cast<RankedTensorType>(keep.getType());
    if (!keepType.getElementType().isInteger(1))
      return emitOpError() << "keep_mask element type must be i1, got "
                           << keepType.getElementType();
    if (failed(verifyBroadcastable(op, "keep_mask", keepType, scoreShape)))
      return failure();
  }

  // Scale.
  if (std::optional<APFloat> scale = op.getScale())
    if (!scale->isFinite())
      return emitOpError() << "scale must be finite";

  // Structural mask.
  bool isWindow = op.getMask() == MaskKind::sliding_window;
  if (!isWindow && (op.getWindowLeft() || op.getWindowRight()))
    return emitOpError() << "window_left and window_right require mask = "
                            "#attn.mask<sliding_window>";
  if (isWindow) {
    if (!op.getWindowLeft() || !op.getWindowRight())
      return emitOpError() << "a sliding_window mask requires both "
                              "window_left and window_right";
    if (static_cast<int64_t>(*op.getWindowLeft()) < 0 ||
        static_cast<int64_t>(*op.getWindowRight()) < 0)
      return emitOpError() << "window bounds must be non-negative, got "
                              "window_left = "
                           << static_cast<int64_t>(*op.getWindowLeft())
                           << ", window_right = "
                           << static_cast<int64_t>(*op.getWindowRight());
  }
  if (op.getMask() == MaskKind::none &&
      op.getAlignment() == MaskAlignment::bottom_right)
    return emitOpError() << "alignment = #attn.alignment<bottom_right> "
                            "requires a causal or sliding_window mask";

  // Dropout.
  double p = op.getDropoutP().convertToDouble();
  if (!(p >= 0.0 && p < 1.0))
    return emitOpError() << "dropout_p must be in [0, 1), got " << p;
  if (p > 0.0 && !op.getSeed())
    return emitOpError() << "dropout_p > 0 requires a seed operand";
  if (p == 0.0 && op.getSeed())
    return emitOpError() << "a seed operand requires dropout_p > 0";
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttentionInputs(*this)))
    return failure();
  ArrayRef<int64_t> q = getQueryType().getShape();
  ArrayRef<int64_t> v = getValueType().getShape();
  Type elementType = getQueryType().getElementType();
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

  return success();
}

LogicalResult AttentionBackwardOp::verify() {
  if (failed(verifyAttentionInputs(*this)))
    return failure();
  ArrayRef<int64_t> q = getQueryType().getShape();
  ArrayRef<int64_t> v = getValueType().getShape();
  Type elementType = getQueryType().getElementType();
  SmallVector<int64_t> outShape = {q[0], q[1], q[2], v[3]};
  auto expectOutput = RankedTensorType::get(outShape, elementType);
  if (getOutput().getType() != expectOutput)
    return emitOpError() << "output must be " << expectOutput
                         << " ([B, Hq, Nq, Dv]), got " << getOutput().getType();
  if (getGradOutput().getType() != expectOutput)
    return emitOpError() << "grad_output must be " << expectOutput
                         << " ([B, Hq, Nq, Dv]), got "
                         << getGradOutput().getType();
  auto expectLse = RankedTensorType::get({q[0], q[1], q[2]},
                                         Float32Type::get(getContext()));
  if (getLse().getType() != expectLse)
    return emitOpError() << "lse must be " << expectLse
                         << " ([B, Hq, Nq] in f32), got " << getLse().getType();
  Type inputs[] = {getQueryType(), getKeyType(), getValueType()};
  StringRef names[] = {"grad_query", "grad_key", "grad_value"};
  for (auto [result, type, name] : llvm::zip(getResults(), inputs, names))
    if (result.getType() != type)
      return emitOpError() << name << " must have the type of its input, "
                           << type << ", got " << result.getType();
  if (Value gradBias = getGradBias()) {
    if (!getBias())
      return emitOpError() << "grad_bias needs a bias operand";
    if (gradBias.getType() != getBias().getType())
      return emitOpError() << "grad_bias must have the type of the bias, "
                           << getBias().getType() << ", got "
                           << gradBias.getType();
  }
  return success();
}

static LogicalResult verifyScoreModRegion(Operation *op, Region &region) {
  auto emitOpError = [&]() { return op->emitOpError(); };
  if (region.empty())
    return success();
  if (!region.hasOneBlock())
    return emitOpError() << "score_mod region must have exactly one block";
  Block &block = region.front();
  MLIRContext *ctx = op->getContext();
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

LogicalResult AttentionOp::verifyRegions() {
  return verifyScoreModRegion(*this, getScoreMod());
}

LogicalResult AttentionBackwardOp::verifyRegions() {
  if (failed(verifyScoreModRegion(*this, getScoreMod())))
    return failure();
  return verifyDifferentiable(getScoreMod());
}
