//===- Registration.cpp - C API: attnfuse dialects and passes -------------===//
#include "attnfuse-c/Registration.h"

#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/InitAll.h"
#include "attnfuse/Pipelines/Pipelines.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Registration.h"

#include <mutex>

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Attn, attn,
                                      attnfuse::attn::AttnDialect)

void attnfuseRegisterAllDialects(MlirDialectRegistry registry) {
  if (mlirDialectRegistryIsNull(registry))
    return;
  attnfuse::registerAllDialects(*unwrap(registry));
}

void attnfuseRegisterAllPasses(void) {
  static std::once_flag once;
  std::call_once(once, [] { attnfuse::registerAllPasses(); });
}

void attnfuseBuildLowerToCPUPipeline(MlirOpPassManager passManager, bool naive,
                                     int64_t blockQ, int64_t blockK) {
  if (!passManager.ptr)
    return;
  attnfuse::CPUPipelineOptions options;
  options.naive = naive;
  options.blockQ = blockQ;
  options.blockK = blockK;
  attnfuse::buildAttnLowerToCPUPipeline(*unwrap(passManager), options);
}
