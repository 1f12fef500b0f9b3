//===- GPUKernels.cpp - the kernels of a module lowered for CUDA ----------===//
#include "attnfuse/ExecutionEngine/GPUKernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"

#include <cstring>

using namespace mlir;

std::vector<attnfuse::GPUKernel>
attnfuse::collectGPUKernels(ModuleOp module) {
  std::vector<GPUKernel> kernels;
  module.walk([&](gpu::LaunchFuncOp launch) {
    auto binary = SymbolTable::lookupNearestSymbolFrom<gpu::BinaryOp>(
        launch, launch.getKernelModuleName());
    if (!binary || binary.getObjects().empty())
      return;
    auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
    GPUKernel kernel;
    kernel.name = launch.getKernelName().str();
    kernel.binary = object.getObject().getValue().str();
    auto constant = [](Value v) -> int64_t {
      APInt value;
      return v && matchPattern(v, m_ConstantInt(&value)) ? value.getSExtValue()
                                                        : -1;
    };
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    Value gridDims[] = {grid.x, grid.y, grid.z};
    Value blockDims[] = {block.x, block.y, block.z};
    for (int i = 0; i < 3; ++i) {
      kernel.grid[i] = constant(gridDims[i]);
      kernel.block[i] = constant(blockDims[i]);
    }
    Value smem = launch.getDynamicSharedMemorySize();
    kernel.dynamicSharedMemoryBytes = smem ? constant(smem) : 0;
    for (Value arg : launch.getKernelOperands()) {
      std::string type;
      llvm::raw_string_ostream(type) << arg.getType();
      // "!llvm.ptr" -> "ptr"; builtin types print plainly ("i64", "f32").
      if (llvm::StringRef(type).starts_with("!llvm."))
        type = type.substr(strlen("!llvm."));
      kernel.argumentTypes.push_back(type);
    }
    kernels.push_back(std::move(kernel));
  });
  return kernels;
}
