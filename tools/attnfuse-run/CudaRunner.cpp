//===- CudaRunner.cpp - run a function's attention kernels on a GPU -------===//
//
// The host side of a function lowered by convert-attn-to-gpu is a sequence of
// gpu.launch_func ops whose memref operands are either the function's tensor
// arguments (bufferization.to_buffer of a block argument) or fresh buffers
// (memref.alloc) that become the function's results (bufferization.to_tensor,
// returned) or feed later launches; scalar operands are function arguments.
// This file reads that plan from the IR, then plays it with device buffers,
// the cubins of the full pipeline, and the CUDA driver API.
//
//===----------------------------------------------------------------------===//
#include "CudaRunner.h"

#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "attnfuse/ExecutionEngine/CudaDriver.h"
#include "attnfuse/ExecutionEngine/GPUKernels.h"
#include "attnfuse/Pipelines/Pipelines.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace attnfuse_run;

namespace {
/// Where a kernel operand comes from.
struct Operand {
  enum Kind { Argument, Buffer } kind;
  unsigned index; // argument number, or buffer number
};

/// A device buffer the host code allocates, and the result it becomes.
struct Buffer {
  MemRefType type;
  std::optional<unsigned> result;
};

/// The launch plan of the entry function after convert-attn-to-gpu.
struct Plan {
  SmallVector<SmallVector<Operand>> launches;
  SmallVector<Buffer> buffers;
};

llvm::Error unsupported(Operation *op, const llvm::Twine &why) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "--target=cuda runs functions made of attention ops only: " << why
     << " (" << op->getName() << " at " << op->getLoc() << ")";
  return llvm::createStringError(text);
}

llvm::Expected<Plan> readPlan(func::FuncOp func) {
  Plan plan;
  llvm::DenseMap<Value, unsigned> bufferOf;
  for (Operation &op : func.getBody().front()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      bufferOf[alloc] = plan.buffers.size();
      plan.buffers.push_back({alloc.getType(), std::nullopt});
      continue;
    }
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
      SmallVector<Operand> operands;
      for (Value v : launch.getKernelOperands()) {
        if (auto arg = dyn_cast<BlockArgument>(v)) {
          operands.push_back({Operand::Argument, arg.getArgNumber()});
          continue;
        }
        auto toBuffer = v.getDefiningOp<bufferization::ToBufferOp>();
        auto arg = toBuffer ? dyn_cast<BlockArgument>(toBuffer.getTensor())
                            : BlockArgument();
        if (arg) {
          operands.push_back({Operand::Argument, arg.getArgNumber()});
        } else if (bufferOf.count(v)) {
          operands.push_back({Operand::Buffer, bufferOf[v]});
        } else {
          return unsupported(launch, "a kernel operand is computed on the "
                                     "host");
        }
      }
      plan.launches.push_back(std::move(operands));
      continue;
    }
    if (isa<bufferization::ToBufferOp, bufferization::ToTensorOp,
            arith::ConstantOp, func::ReturnOp>(op))
      continue;
    return unsupported(&op, "the function computes on the host");
  }
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto toTensor = v.getDefiningOp<bufferization::ToTensorOp>();
    if (!toTensor || !bufferOf.count(toTensor.getBuffer()))
      return unsupported(ret, "result " + llvm::Twine(i) +
                                  " is not written by a kernel");
    plan.buffers[bufferOf[toTensor.getBuffer()]].result = i;
  }
  return plan;
}

size_t byteSize(MemRefType type) {
  unsigned bits = type.getElementTypeBitWidth();
  return type.getNumElements() * (bits == 1 ? 1 : bits / 8);
}
} // namespace

llvm::Expected<SmallVector<HostTensor>>
attnfuse_run::executeOnCuda(ModuleOp input, StringRef entry,
                            StringRef pipelineOptions,
                            ArrayRef<HostTensor> inputs) {
  // Unfused chains become attn.attention first, as in the CPU pipeline.
  OwningOpRef<ModuleOp> raised = input.clone();
  PassManager raise(input.getContext());
  attnfuse::attn::AttnRaiseAttentionOptions raiseOptions;
  raiseOptions.report = "none";
  raise.addPass(attnfuse::attn::createAttnRaiseAttention(raiseOptions));
  raise.addPass(createLinalgElementwiseOpFusionPass());
  raise.addPass(createCanonicalizerPass());
  if (failed(raise.run(*raised)))
    return llvm::createStringError("attn-raise-attention failed");
  ModuleOp module = *raised;

  // The launch plan, from the IR right after the kernels are formed.
  OwningOpRef<ModuleOp> staged = module.clone();
  attnfuse::GPUPipelineOptions options;
  if (failed(options.parseFromString(pipelineOptions)))
    return llvm::createStringError("invalid --pipeline-options for the GPU "
                                   "pipeline");
  PassManager stage(module.getContext());
  stage.addPass(attnfuse::createConvertAttnToGPU());
  if (failed(stage.run(*staged)))
    return llvm::createStringError("convert-attn-to-gpu failed");
  llvm::Expected<Plan> plan =
      readPlan(staged->lookupSymbol<func::FuncOp>(entry));
  if (!plan)
    return plan.takeError();

  // The cubins: the whole pipeline, on another clone.
  OwningOpRef<ModuleOp> lowered = module.clone();
  options.format = "bin";
  PassManager pm(module.getContext());
  attnfuse::buildAttnLowerToNVVMPipeline(pm, options);
  if (failed(pm.run(*lowered)))
    return llvm::createStringError("attn-lower-to-nvvm-pipeline failed");
  std::vector<attnfuse::GPUKernel> kernels =
      attnfuse::collectGPUKernels(*lowered);
  if (kernels.size() != plan->launches.size())
    return llvm::createStringError("the pipeline produced " +
                                   llvm::Twine(kernels.size()) +
                                   " kernel launches, the plan " +
                                   llvm::Twine(plan->launches.size()));

  llvm::Expected<attnfuse::CudaDriver *> driver = attnfuse::CudaDriver::get();
  if (!driver)
    return driver.takeError();
  attnfuse::CudaDriver &cuda = **driver;
  // Device copies of the tensor arguments and the allocated buffers.
  SmallVector<uint64_t> argumentPtrs(inputs.size(), 0), bufferPtrs;
  auto release = [&] {
    for (uint64_t p : argumentPtrs)
      if (p)
        llvm::consumeError(cuda.free(p));
    for (uint64_t p : bufferPtrs)
      llvm::consumeError(cuda.free(p));
  };
  auto fail = [&](llvm::Error e) -> llvm::Error {
    release();
    return e;
  };
  FunctionType signature =
      module.lookupSymbol<func::FuncOp>(entry).getFunctionType();
  for (auto [i, type] : llvm::enumerate(signature.getInputs())) {
    if (!isa<RankedTensorType>(type))
      continue;
    llvm::Expected<uint64_t> ptr = cuda.allocate(inputs[i].getNumBytes());
    if (!ptr)
      return fail(ptr.takeError());
    argumentPtrs[i] = *ptr;
    if (llvm::Error e = cuda.copyToDevice(*ptr, inputs[i].data(),
                                          inputs[i].getNumBytes()))
      return fail(std::move(e));
  }
  for (const Buffer &buffer : plan->buffers) {
    llvm::Expected<uint64_t> ptr = cuda.allocate(byteSize(buffer.type));
    if (!ptr)
      return fail(ptr.takeError());
    bufferPtrs.push_back(*ptr);
  }

  // The launches, in program order.
  for (auto [kernel, operands] : llvm::zip(kernels, plan->launches)) {
    llvm::Expected<void *> function = cuda.loadFunction(
        kernel.binary, kernel.name, kernel.dynamicSharedMemoryBytes);
    if (!function)
      return fail(function.takeError());
    SmallVector<uint64_t> values; // pointers or i64 scalars, 8 bytes each
    for (auto [o, type] : llvm::zip(operands, kernel.argumentTypes)) {
      if (type != "ptr" && type != "i64")
        return fail(llvm::createStringError(
            "kernel " + kernel.name + " takes a " + type +
            " argument; --target=cuda passes pointers and i64 scalars"));
      if (o.kind == Operand::Buffer)
        values.push_back(bufferPtrs[o.index]);
      else if (argumentPtrs[o.index])
        values.push_back(argumentPtrs[o.index]);
      else // a scalar argument, passed by value (the dropout seed)
        values.push_back(static_cast<uint64_t>(inputs[o.index].getInt(0)));
    }
    SmallVector<void *> arguments;
    for (uint64_t &v : values)
      arguments.push_back(&v);
    if (llvm::Error e =
            cuda.launch(*function, kernel.grid, kernel.block,
                        kernel.dynamicSharedMemoryBytes, arguments))
      return fail(std::move(e));
  }

  // The results.
  SmallVector<HostTensor> results;
  for (Type type : signature.getResults()) {
    auto tensorType = cast<RankedTensorType>(type);
    results.emplace_back(*getElementKind(tensorType.getElementType()),
                         tensorType.getShape());
  }
  for (auto [buffer, ptr] : llvm::zip(plan->buffers, bufferPtrs)) {
    if (!buffer.result)
      continue;
    HostTensor &out = results[*buffer.result];
    if (llvm::Error e = cuda.copyToHost(out.data(), ptr, out.getNumBytes()))
      return fail(std::move(e));
  }
  release();
  return results;
}
