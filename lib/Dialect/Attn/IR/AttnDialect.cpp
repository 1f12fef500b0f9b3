//===- AttnDialect.cpp - the attn dialect ---------------------------------===//
#include "attnfuse/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace attnfuse::attn;

#include "attnfuse/Dialect/Attn/IR/AttnOpsDialect.cpp.inc"
#include "attnfuse/Dialect/Attn/IR/AttnEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "attnfuse/Dialect/Attn/IR/AttnAttrs.cpp.inc"

void AttnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attnfuse/Dialect/Attn/IR/AttnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "attnfuse/Dialect/Attn/IR/AttnOps.cpp.inc"
      >();
}
