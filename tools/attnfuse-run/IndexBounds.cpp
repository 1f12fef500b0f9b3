//===- IndexBounds.cpp - the range of integer arguments that index --------===//
#include "IndexBounds.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>

using namespace mlir;

/// Whether `type` (or its element type) is an integer wider than i1 or an
/// index: what can carry an index.
static bool carriesIndex(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (isa<IndexType>(element))
    return true;
  auto integer = dyn_cast<IntegerType>(element);
  return integer && integer.getWidth() > 1;
}

std::optional<int64_t> attnfuse_run::findIndexedSize(func::FuncOp func,
                                                     unsigned index) {
  std::optional<int64_t> smallest;
  auto indexes = [&](int64_t size) {
    if (!ShapedType::isDynamic(size) && size > 0)
      smallest = std::min(smallest.value_or(size), size);
  };
  llvm::SetVector<Value> values;
  values.insert(func.getArgument(index));
  for (size_t i = 0; i < values.size(); ++i) {
    for (OpOperand &use : values[i].getUses()) {
      Operation *user = use.getOwner();
      if (auto extract = dyn_cast<tensor::ExtractOp>(user)) {
        if (use.getOperandNumber() > 0)
          indexes(extract.getTensor().getType().getDimSize(
              use.getOperandNumber() - 1));
        continue;
      }
      if (auto gather = dyn_cast<tosa::GatherOp>(user)) {
        if (&use == &gather.getIndicesMutable())
          indexes(cast<ShapedType>(gather.getValues().getType()).getDimSize(1));
        continue;
      }
      // Into the body of a linalg op, and out of it through its yield.
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(user))
        if (linalgOp.isDpsInput(&use))
          values.insert(linalgOp.getMatchingBlockArgument(&use));
      if (auto yield = dyn_cast<linalg::YieldOp>(user)) {
        values.insert(yield->getParentOp()->getResult(use.getOperandNumber()));
        continue;
      }
      for (Value result : user->getResults())
        if (carriesIndex(result.getType()))
          values.insert(result);
    }
  }
  return smallest;
}
