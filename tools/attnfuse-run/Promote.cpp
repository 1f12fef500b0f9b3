//===- Promote.cpp - evaluate a module in fp64 ----------------------------===//
#include "Promote.h"

#include "attnfuse/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/APFloat.h"

using namespace mlir;

/// The discardable attribute of an arith.truncf that roundAttentionResults
/// inserts: the element type (f16, bf16, f32) to round to after promotion.
static constexpr llvm::StringLiteral kRoundTo = "attnfuse_run.round_to";

/// Returns `type` with f16, bf16 and f32 replaced by f64, recursively through
/// shaped, complex and function types.
static Type promoteType(Type type) {
  if (isa<Float16Type, BFloat16Type, Float32Type>(type))
    return Float64Type::get(type.getContext());
  if (auto shaped = dyn_cast<ShapedType>(type))
    return shaped.clone(promoteType(shaped.getElementType()));
  if (auto complex = dyn_cast<ComplexType>(type))
    return ComplexType::get(promoteType(complex.getElementType()));
  if (auto function = dyn_cast<FunctionType>(type)) {
    auto promote = [](TypeRange types) {
      return llvm::map_to_vector(types, promoteType);
    };
    return FunctionType::get(type.getContext(),
                             promote(function.getInputs()),
                             promote(function.getResults()));
  }
  return type;
}

/// Returns `value` (a FloatAttr, DenseElementsAttr or DenseResourceElementsAttr
/// of a promoted type) converted exactly to f64, or null if it is of another
/// kind.
static TypedAttr promoteConstant(TypedAttr value) {
  Type f64 = Float64Type::get(value.getContext());
  if (auto floatAttr = dyn_cast<FloatAttr>(value))
    return FloatAttr::get(f64, floatAttr.getValueAsDouble());
  // A resource blob (torch-mlir's weights) holds the elements as in memory.
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return {};
    ArrayRef<char> data = blob->getData();
    bool splat = false;
    if (!DenseElementsAttr::isValidRawBuffer(resource.getType(), data, splat))
      return {};
    value = DenseElementsAttr::getFromRawBuffer(resource.getType(), data);
  }
  if (auto dense = dyn_cast<DenseFPElementsAttr>(value))
    return dense.mapValues(f64, [](const APFloat &element) {
      APFloat wide = element;
      bool losesInfo;
      wide.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                   &losesInfo);
      return wide.bitcastToAPInt();
    });
  return {};
}

/// Promotes the types of `op`'s results, block arguments and type attributes,
/// and the value of an arith.constant.
static LogicalResult promoteOp(Operation *op) {
  if (auto bitcast = dyn_cast<arith::BitcastOp>(op)) {
    if (promoteType(bitcast.getIn().getType()) != bitcast.getIn().getType() ||
        promoteType(bitcast.getType()) != bitcast.getType())
      return bitcast.emitOpError()
             << "reinterprets the bits of a float that fp64 evaluation "
                "promotes to f64";
  }
  // The value of a constant (arith.constant, tosa.const: any constant-like
  // op) has the type of its result.
  if (op->hasTrait<OpTrait::ConstantLike>() && op->getNumResults() == 1) {
    Type type = op->getResult(0).getType();
    for (NamedAttribute attr : SmallVector<NamedAttribute>(op->getAttrs())) {
      auto value = dyn_cast<TypedAttr>(attr.getValue());
      if (!value || value.getType() != type || promoteType(type) == type)
        continue;
      TypedAttr promoted = promoteConstant(value);
      if (!promoted)
        return op->emitOpError()
               << "has a value that fp64 evaluation cannot promote: " << value;
      op->setAttr(attr.getName(), promoted);
    }
  }
  for (OpResult result : op->getResults())
    result.setType(promoteType(result.getType()));
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (BlockArgument arg : block.getArguments())
        arg.setType(promoteType(arg.getType()));
  for (NamedAttribute attr : SmallVector<NamedAttribute>(op->getAttrs()))
    if (auto typeAttr = dyn_cast<TypeAttr>(attr.getValue()))
      op->setAttr(attr.getName(),
                  TypeAttr::get(promoteType(typeAttr.getValue())));
  return success();
}

LogicalResult attnfuse_run::promoteFloatsToF64(ModuleOp module) {
  WalkResult walk = module.walk([](Operation *op) {
    return failed(promoteOp(op)) ? WalkResult::interrupt()
                                 : WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // Conversions between float types are now f64 -> f64; a rounding that
  // roundAttentionResults marked becomes f64 -> f32 [-> f16/bf16 -> f32]
  // -> f64 (through f32: the CPU pipeline truncates f32 to f16/bf16).
  SmallVector<Operation *> identities;
  module.walk([&](Operation *op) {
    if (isa<arith::ExtFOp, arith::TruncFOp>(op) &&
        op->getOperand(0).getType() == op->getResult(0).getType())
      identities.push_back(op);
  });
  for (Operation *op : identities) {
    if (auto to = op->getAttrOfType<StringAttr>(kRoundTo)) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      Type f32 = b.getF32Type();
      Value x = arith::TruncFOp::create(b, loc, f32, op->getOperand(0));
      Type narrow = to.getValue() == "f16"    ? Type(b.getF16Type())
                    : to.getValue() == "bf16" ? Type(b.getBF16Type())
                                              : Type();
      if (narrow)
        x = arith::ExtFOp::create(
            b, loc, f32, arith::TruncFOp::create(b, loc, narrow, x).getResult());
      x = arith::ExtFOp::create(b, loc, b.getF64Type(), x);
      op->getResult(0).replaceAllUsesWith(x);
      op->erase();
      continue;
    }
    op->getResult(0).replaceAllUsesWith(op->getOperand(0));
    op->erase();
  }
  return verify(module);
}

void attnfuse_run::roundAttentionResults(ModuleOp module) {
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (isa<attnfuse::attn::AttentionOp, attnfuse::attn::AttentionBackwardOp>(
            op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    Location loc = op->getLoc();
    for (OpResult result : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || !isa<Float16Type, BFloat16Type, Float32Type>(
                       type.getElementType()))
        continue;
      Type element = type.getElementType();
      StringRef name = isa<Float16Type>(element)    ? "f16"
                       : isa<BFloat16Type>(element) ? "bf16"
                                                    : "f32";
      // x -> f64 -> x's type: the identity until promotion.
      SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, result);
      Value init = tensor::EmptyOp::create(b, loc, sizes, element);
      AffineMap id = b.getMultiDimIdentityMap(type.getRank());
      SmallVector<utils::IteratorType> iters(type.getRank(),
                                             utils::IteratorType::parallel);
      auto round = linalg::GenericOp::create(
          b, loc, TypeRange{type}, ValueRange{result}, ValueRange{init},
          ArrayRef<AffineMap>{id, id}, iters,
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value wide = arith::ExtFOp::create(nb, nl, nb.getF64Type(), args[0]);
            auto narrow = arith::TruncFOp::create(nb, nl, element, wide);
            narrow->setAttr(kRoundTo, nb.getStringAttr(name));
            linalg::YieldOp::create(nb, nl, narrow.getResult());
          });
      // Every use but the rounding and the tensor.dim of its runtime sizes.
      result.replaceUsesWithIf(round.getResult(0), [&](OpOperand &use) {
        Operation *user = use.getOwner();
        return user != round &&
               !(isa<tensor::DimOp>(user) && user->getBlock() == round->getBlock() &&
                                  user->isBeforeInBlock(round));
      });
    }
  }
}
