//===- CudaRunner.cpp - run a function's attention kernels on a GPU -------===//
//
// After the first half of attn-lower-to-nvvm-pipeline
// (buildAttnGPUKernelsPipeline), the host side of a function of attention ops
// is a sequence of gpu.launch_func ops whose operands are the function's
// arguments (buffers, or scalars such as the dropout seed), constants, or
// fresh buffers (memref.alloc) that become the function's results or feed
// later launches (the naive lowering's intermediate tensors). This holds for
// the fused kernels of convert-attn-to-gpu and for the naive ones of
// naive=true alike. This file reads that plan from the IR, finishes the
// pipeline (the cubins), then plays the plan with device buffers and the CUDA
// driver API.
//
//===----------------------------------------------------------------------===//
#include "CudaRunner.h"

#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "attnfuse/ExecutionEngine/CudaDriver.h"
#include "attnfuse/ExecutionEngine/GPUKernels.h"
#include "attnfuse/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <cstring>

using namespace mlir;
using namespace attnfuse_run;

namespace {
/// Where a kernel operand comes from.
struct Operand {
  enum Kind { Argument, Buffer, Constant } kind;
  unsigned index = 0; // argument number, or buffer number
  /// A constant's bits (an integer's value, a float's encoding).
  APInt bits;
  bool isFloat = false;
};

/// A device buffer the host code allocates, and the results it becomes.
struct Buffer {
  MemRefType type;
  SmallVector<unsigned> results;
};

/// The launch plan of the entry function.
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

/// Returns the function argument `v` is (directly or through
/// bufferization.to_buffer), if any.
BlockArgument asArgument(Value v) {
  if (auto toBuffer = v.getDefiningOp<bufferization::ToBufferOp>())
    v = toBuffer.getTensor();
  return dyn_cast<BlockArgument>(v);
}

llvm::Expected<Plan> readPlan(func::FuncOp func) {
  Plan plan;
  llvm::DenseMap<Value, unsigned> bufferOf;
  if (!func.getBody().hasOneBlock())
    return unsupported(func, "the function has control flow on the host");
  for (Operation &op : func.getBody().front()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      if (!alloc.getType().hasStaticShape() ||
          !alloc.getType().getLayout().isIdentity())
        return unsupported(alloc, "a buffer of dynamic shape or layout");
      bufferOf[alloc] = plan.buffers.size();
      plan.buffers.push_back({alloc.getType(), {}});
      continue;
    }
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
      SmallVector<Operand> operands;
      for (Value v : launch.getKernelOperands()) {
        Attribute value;
        if (BlockArgument arg = asArgument(v)) {
          operands.push_back({Operand::Argument, arg.getArgNumber(), APInt(), false});
        } else if (bufferOf.count(v)) {
          operands.push_back({Operand::Buffer, bufferOf[v], APInt(), false});
        } else if (matchPattern(v, m_Constant(&value)) &&
                   isa<IntegerAttr, FloatAttr>(value)) {
          APInt bits =
              isa<IntegerAttr>(value)
                  ? cast<IntegerAttr>(value).getValue()
                  : cast<FloatAttr>(value).getValue().bitcastToAPInt();
          operands.push_back(
              {Operand::Constant, 0, bits, isa<FloatAttr>(value)});
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
    if (auto toTensor = v.getDefiningOp<bufferization::ToTensorOp>())
      v = toTensor.getBuffer();
    if (!bufferOf.count(v))
      return unsupported(ret, "result " + llvm::Twine(i) +
                                  " is not written by a kernel");
    plan.buffers[bufferOf[v]].results.push_back(i);
  }
  return plan;
}

size_t byteSize(MemRefType type) {
  unsigned bits = type.getElementTypeBitWidth();
  return type.getNumElements() * (bits == 1 ? 1 : bits / 8);
}

/// The width in bits of a scalar kernel argument of LLVM type `type` ("i64",
/// "f32", ...; 0 if it is none of those).
unsigned scalarBits(llvm::StringRef type) {
  unsigned bits = 0;
  if (type == "f16" || type == "bf16")
    return 16;
  if (type == "f32")
    return 32;
  if (type == "f64")
    return 64;
  if (type.consume_front("i") && !type.getAsInteger(10, bits) && bits <= 64)
    return bits;
  return 0;
}

/// Checks that a kernel's launch configuration is known and within CUDA's
/// limits.
llvm::Error checkLaunchConfiguration(const attnfuse::GPUKernel &kernel) {
  auto error = [&](const llvm::Twine &why) {
    return llvm::createStringError("kernel " + kernel.name + ": " + why);
  };
  int64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (kernel.grid[i] < 1 || kernel.block[i] < 1)
      return error("its grid and block sizes are not compile-time constants");
    threads *= kernel.block[i];
  }
  if (kernel.dynamicSharedMemoryBytes < 0)
    return error("its dynamic shared memory is not a compile-time constant");
  if (threads > 1024 || kernel.block[2] > 64)
    return error("a block of " + llvm::Twine(kernel.block[0]) + "x" +
                 llvm::Twine(kernel.block[1]) + "x" +
                 llvm::Twine(kernel.block[2]) +
                 " threads exceeds CUDA's limits");
  if (kernel.grid[0] > 2147483647 || kernel.grid[1] > 65535 ||
      kernel.grid[2] > 65535)
    return error("a grid of " + llvm::Twine(kernel.grid[0]) + "x" +
                 llvm::Twine(kernel.grid[1]) + "x" +
                 llvm::Twine(kernel.grid[2]) +
                 " blocks exceeds CUDA's limits");
  return llvm::Error::success();
}
} // namespace

llvm::Expected<SmallVector<HostTensor>>
attnfuse_run::executeOnCuda(ModuleOp input, StringRef entry,
                            StringRef pipelineOptions, bool naive,
                            ArrayRef<HostTensor> inputs) {
  // Unfused chains become attn.attention first (the pipeline raises again:
  // nothing is left then), as in the CPU pipeline.
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

  // Only the entry function is compiled: kernels of the module's other
  // functions would not be in its launch plan.
  for (auto other :
       llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (other.getSymName() != entry)
      other.erase();

  // What the GPU pipeline turns into kernel launches: attention ops between
  // the function's arguments and results.
  auto func = module.lookupSymbol<func::FuncOp>(entry);
  for (Operation &op : func.getBody().getOps())
    if (!isa<arith::ConstantOp, func::ReturnOp>(op) &&
        !isa<attnfuse::attn::AttnDialect>(op.getDialect()))
      return unsupported(&op, "the function computes on the host");

  // The launch plan, from the bufferized host code once the kernels are
  // outlined (the first half of the pipeline).
  attnfuse::GPUPipelineOptions options;
  if (failed(options.parseFromString(pipelineOptions)))
    return llvm::createStringError("invalid --pipeline-options for the GPU "
                                   "pipeline");
  options.naive = naive;
  options.format = "bin";
  StringRef pipelineName = naive ? "attn-lower-to-nvvm-pipeline{naive=true}"
                                 : "attn-lower-to-nvvm-pipeline";
  PassManager kernelsPM(module.getContext());
  attnfuse::buildAttnGPUKernelsPipeline(kernelsPM, options);
  if (failed(kernelsPM.run(module)))
    return llvm::createStringError(pipelineName + " failed");
  llvm::Expected<Plan> plan =
      readPlan(module.lookupSymbol<func::FuncOp>(entry));
  if (!plan)
    return plan.takeError();

  // The cubins: the second half of the pipeline.
  PassManager binaryPM(module.getContext());
  attnfuse::buildAttnGPUBinaryPipeline(binaryPM, options);
  if (failed(binaryPM.run(module)))
    return llvm::createStringError(pipelineName + " failed");
  std::vector<attnfuse::GPUKernel> kernels =
      attnfuse::collectGPUKernels(module);
  if (kernels.size() != plan->launches.size())
    return llvm::createStringError("the pipeline produced " +
                                   llvm::Twine(kernels.size()) +
                                   " kernel launches, the plan " +
                                   llvm::Twine(plan->launches.size()));
  for (const attnfuse::GPUKernel &kernel : kernels)
    if (llvm::Error e = checkLaunchConfiguration(kernel))
      return std::move(e);

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
      input.lookupSymbol<func::FuncOp>(entry).getFunctionType();
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
    if (operands.size() != kernel.argumentTypes.size())
      return fail(llvm::createStringError(
          "kernel " + kernel.name + " takes " +
          llvm::Twine(kernel.argumentTypes.size()) + " arguments, the plan " +
          llvm::Twine(operands.size())));
    // One 8-byte slot per argument: a pointer, or a scalar in its low bytes
    // (little-endian), as wide as the kernel parameter.
    SmallVector<uint64_t> values;
    for (auto [o, type] : llvm::zip(operands, kernel.argumentTypes)) {
      bool isPointer =
          o.kind == Operand::Buffer ||
          (o.kind == Operand::Argument &&
           isa<RankedTensorType>(signature.getInput(o.index)));
      unsigned bits = scalarBits(type);
      if (isPointer != (type == "ptr") || (!isPointer && bits == 0))
        return fail(llvm::createStringError(
            "kernel " + kernel.name + " takes a " + type +
            " argument where the plan has a " +
            (isPointer ? "buffer" : "scalar") +
            "; --target=cuda passes buffers as pointers and integer or float "
            "scalars"));
      uint64_t slot = 0;
      if (o.kind == Operand::Buffer) {
        slot = bufferPtrs[o.index];
      } else if (isPointer) {
        slot = argumentPtrs[o.index];
      } else if (o.kind == Operand::Constant) {
        // Integer constants (index ones are i64 in the kernel) as wide as
        // the parameter; float constants must already be.
        if (o.isFloat && o.bits.getBitWidth() != bits)
          return fail(llvm::createStringError(
              "kernel " + kernel.name + " takes a " + type +
              " argument for a float constant of " +
              llvm::Twine(o.bits.getBitWidth()) + " bits"));
        slot = o.bits.sextOrTrunc(bits).getZExtValue();
      } else {
        // A scalar argument, passed by value (the dropout seed).
        const HostTensor &scalar = inputs[o.index];
        if (scalar.getNumBytes() * 8 != (bits == 1 ? 8 : bits))
          return fail(llvm::createStringError(
              "kernel " + kernel.name + " takes a " + type +
              " argument for function argument " + llvm::Twine(o.index) +
              " of " + llvm::Twine(scalar.getNumBytes()) + " bytes"));
        std::memcpy(&slot, scalar.data(), scalar.getNumBytes());
      }
      values.push_back(slot);
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
    for (unsigned result : buffer.results) {
      HostTensor &out = results[result];
      if (llvm::Error e = cuda.copyToHost(out.data(), ptr, out.getNumBytes()))
        return fail(std::move(e));
    }
  }
  release();
  return results;
}
