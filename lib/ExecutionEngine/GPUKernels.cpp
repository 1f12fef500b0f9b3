//===- GPUKernels.cpp - the kernels of a module lowered for CUDA ----------===//
#include "attnfuse/ExecutionEngine/GPUKernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/JSON.h"

#include <cstring>

using namespace mlir;

attnfuse::KernelAttributeTable
attnfuse::collectKernelAttributes(ModuleOp module) {
  KernelAttributeTable table;
  module.walk([&](gpu::GPUFuncOp func) {
    auto names = func->getAttrOfType<ArrayAttr>("attn.args");
    auto maps = func->getAttrOfType<ArrayAttr>("attn.tensor_maps");
    auto family = func->getAttrOfType<StringAttr>("attn.family");
    if (!names && !maps && !family)
      return;
    auto module = func->getParentOfType<gpu::GPUModuleOp>();
    KernelAttributes &entry =
        table[(module.getName() + "::" + func.getName()).str()];
    if (names)
      for (auto name : names.getAsRange<StringAttr>())
        entry.argumentNames.push_back(name.str());
    if (family)
      entry.family = family.str();
    if (!maps)
      return;
    for (auto map : maps.getAsRange<DictionaryAttr>()) {
      auto integer = [&](StringRef key) {
        return map.getAs<IntegerAttr>(key).getInt();
      };
      TensorMapArgument arg;
      arg.argument = integer("argument");
      arg.source = integer("source");
      auto source = cast<MemRefType>(func.getArgumentTypes()[arg.source]);
      llvm::raw_string_ostream(arg.elementType) << source.getElementType();
      arg.dims.assign(source.getShape().begin(), source.getShape().end());
      // A permuted view (Q, K, V read in place in [B, N, H, D]): its
      // strides; contiguous otherwise.
      if (!source.getLayout().isIdentity()) {
        int64_t offset;
        SmallVector<int64_t> strides;
        if (succeeded(source.getStridesAndOffset(strides, offset)))
          arg.strides.assign(strides.begin(), strides.end());
      }
      ArrayRef<int64_t> box = map.getAs<DenseI64ArrayAttr>("box").asArrayRef();
      arg.box.assign(box.begin(), box.end());
      arg.swizzle = integer("swizzle");
      arg.l2Promotion = integer("l2_promotion");
      entry.tensorMaps.push_back(std::move(arg));
    }
  });
  return table;
}

std::string
attnfuse::tensorMapsToJSON(const std::vector<TensorMapArgument> &maps) {
  llvm::json::Array array;
  for (const TensorMapArgument &m : maps)
    array.push_back(llvm::json::Object{{"argument", m.argument},
                                       {"source", m.source},
                                       {"dtype", m.elementType},
                                       {"dims", llvm::json::Array(m.dims)},
                                       {"strides", llvm::json::Array(m.strides)},
                                       {"box", llvm::json::Array(m.box)},
                                       {"swizzle", m.swizzle},
                                       {"l2_promotion", m.l2Promotion}});
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(array));
  return text;
}

std::vector<attnfuse::GPUKernel>
attnfuse::collectGPUKernels(ModuleOp module,
                            const KernelAttributeTable &attributes) {
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
    if (auto it = attributes.find(
            (launch.getKernelModuleName().getValue() + "::" + kernel.name)
                .str());
        it != attributes.end()) {
      kernel.argumentNames = it->second.argumentNames;
      kernel.tensorMaps = it->second.tensorMaps;
      kernel.family = it->second.family;
    }
    kernels.push_back(std::move(kernel));
  });
  return kernels;
}

FailureOr<std::vector<attnfuse::GPUKernel>> attnfuse::compileForCuda(
    ModuleOp module, GPUPipelineOptions &options,
    function_ref<LogicalResult(ModuleOp)> afterKernels) {
  options.format = "bin";
  PassManager kernels(module.getContext(), ModuleOp::getOperationName(),
                      OpPassManager::Nesting::Implicit);
  buildAttnGPUKernelsPipeline(kernels, options);
  if (failed(kernels.run(module)))
    return failure();
  if (afterKernels && failed(afterKernels(module)))
    return failure();
  // The binaries keep no attributes: read them first.
  KernelAttributeTable attributes = collectKernelAttributes(module);
  PassManager binaries(module.getContext(), ModuleOp::getOperationName(),
                       OpPassManager::Nesting::Implicit);
  buildAttnGPUBinaryPipeline(binaries, options);
  if (failed(binaries.run(module)))
    return failure();
  return collectGPUKernels(module, attributes);
}
