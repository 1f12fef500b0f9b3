/*===-- attnfuse-c/Registration.h - attnfuse dialects and passes --*- C -*-===*\
|*                                                                            *|
|* Registers attnfuse's dialects, passes and pipelines with an MLIR C API     *|
|* context, registry or pass manager (for embedders that already use          *|
|* mlir-c, e.g. a compiler with MLIR's own C API or Python bindings).         *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef ATTNFUSE_C_REGISTRATION_H
#define ATTNFUSE_C_REGISTRATION_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The handle of the attn dialect: `mlirGetDialectHandle__attn__()`.
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Attn, attn);

/// Inserts every attnfuse dialect (today: attn) into `registry`; nothing
/// for a null registry.
MLIR_CAPI_EXPORTED void
attnfuseRegisterAllDialects(MlirDialectRegistry registry);

/// Registers attnfuse's passes and pipelines with the global pass registry,
/// so that textual pipelines can name them (`convert-attn-to-scf`,
/// `attn-lower-to-cpu-pipeline`, ...). Idempotent.
MLIR_CAPI_EXPORTED void attnfuseRegisterAllPasses(void);

/// Adds `attn-lower-to-cpu-pipeline` to `passManager` (the C counterpart of
/// attnfuse::buildAttnLowerToCPUPipeline). `naive` selects the reference
/// lowering; `blockQ`/`blockK` are the tile sizes of the fused lowering.
/// Nothing for a null pass manager.
MLIR_CAPI_EXPORTED void
attnfuseBuildLowerToCPUPipeline(MlirOpPassManager passManager, bool naive,
                                int64_t blockQ, int64_t blockK);

#ifdef __cplusplus
}
#endif

#endif // ATTNFUSE_C_REGISTRATION_H
