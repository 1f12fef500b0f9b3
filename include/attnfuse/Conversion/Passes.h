//===- Passes.h - attnfuse conversion passes --------------------*- C++ -*-===//
#ifndef ATTNFUSE_CONVERSION_PASSES_H
#define ATTNFUSE_CONVERSION_PASSES_H

#include "attnfuse/Conversion/AttnToGPU/AttnToGPU.h"
#include "attnfuse/Conversion/AttnToLinalg/AttnToLinalg.h"
#include "attnfuse/Conversion/AttnToSCF/AttnToSCF.h"
#include "mlir/Pass/Pass.h"

namespace attnfuse {
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "attnfuse/Conversion/Passes.h.inc"
} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_PASSES_H
