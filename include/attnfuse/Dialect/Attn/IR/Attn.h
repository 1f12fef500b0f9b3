//===- Attn.h - the attn dialect, its attributes and operations -*- C++ -*-===//
#ifndef ATTNFUSE_DIALECT_ATTN_IR_ATTN_H
#define ATTNFUSE_DIALECT_ATTN_IR_ATTN_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "attnfuse/Dialect/Attn/IR/AttnOpsDialect.h.inc"
#include "attnfuse/Dialect/Attn/IR/AttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attnfuse/Dialect/Attn/IR/AttnAttrs.h.inc"

#define GET_OP_CLASSES
#include "attnfuse/Dialect/Attn/IR/AttnOps.h.inc"

#endif // ATTNFUSE_DIALECT_ATTN_IR_ATTN_H
