//===- Promote.cpp - evaluate a module in fp64 ----------------------------===//
#include "Promote.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/APFloat.h"

using namespace mlir;

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

  // Conversions between float types are now f64 -> f64.
  SmallVector<Operation *> identities;
  module.walk([&](Operation *op) {
    if (isa<arith::ExtFOp, arith::TruncFOp>(op) &&
        op->getOperand(0).getType() == op->getResult(0).getType())
      identities.push_back(op);
  });
  for (Operation *op : identities) {
    op->getResult(0).replaceAllUsesWith(op->getOperand(0));
    op->erase();
  }
  return verify(module);
}
