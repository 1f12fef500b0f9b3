/*===- capi.c - tests of attnfuse's C API ---------------------------------===*/
// RUN: %attnfuse_capi_test 2>&1 | FileCheck %s

#include "attnfuse-c/Compiler.h"
#include "attnfuse-c/Registration.h"

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static MlirStringRef str(const char *s) {
  return mlirStringRefCreate(s, strlen(s));
}

static void printDiagnostics(AttnfuseCompilation c) {
  for (intptr_t i = 0; i < attnfuseCompilationGetNumDiagnostics(c); ++i) {
    AttnfuseDiagnostic d = attnfuseCompilationGetDiagnostic(c, i);
    printf("diagnostic %d at '%.*s': %.*s\n", (int)d.severity,
           (int)d.location.length, d.location.data, (int)d.message.length,
           d.message.data);
  }
}

static int contains(MlirStringRef haystack, const char *needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; i + n <= haystack.length; ++i)
    if (!memcmp(haystack.data + i, needle, n))
      return 1;
  return 0;
}

static const char *kAttention =
    "func.func @attention(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>,\n"
    "                     %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {\n"
    "  %out = attn.attention ins(%q, %k, %v : tensor<1x2x8x4xf32>,\n"
    "      tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>\n"
    "  return %out : tensor<1x2x8x4xf32>\n"
    "}\n";

// The registration entry points on an MLIR C API context: the attn dialect
// parses, and the CPU pipeline added to a C API pass manager lowers it.
static void testRegistration(void) {
  printf("testRegistration\n");
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  attnfuseRegisterAllDialects(registry);
  MlirContext ctx = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  mlirContextSetAllowUnregisteredDialects(ctx, false);
  MlirDialect attn = mlirContextGetOrLoadDialect(ctx, str("attn"));
  // CHECK-LABEL: testRegistration
  // CHECK: attn loaded: 1
  printf("attn loaded: %d\n", !mlirDialectIsNull(attn));
  MlirDialectHandle handle = mlirGetDialectHandle__attn__();
  MlirStringRef ns = mlirDialectHandleGetNamespace(handle);
  // CHECK: handle namespace: attn
  printf("handle namespace: %.*s\n", (int)ns.length, ns.data);
  mlirContextDestroy(ctx);
}

// attnfuseCompile with the default pipeline: LLVM dialect out, no attn left.
static void testCompile(void) {
  printf("testCompile\n");
  AttnfuseCompilation c = attnfuseCompile(str(kAttention),
                                          (AttnfuseCompileOptions){NULL});
  MlirStringRef ir = attnfuseCompilationGetIR(c);
  // CHECK-LABEL: testCompile
  // CHECK: succeeded 1, llvm.func 1, attn 0, executable 0
  printf("succeeded %d, llvm.func %d, attn %d, executable %d\n",
         attnfuseCompilationSucceeded(c), contains(ir, "llvm.func @attention"),
         contains(ir, "attn."), attnfuseCompilationIsExecutable(c));
  attnfuseCompilationDestroy(c);
}

// A custom pipeline by name, and its options.
static void testPipeline(void) {
  printf("testPipeline\n");
  AttnfuseCompileOptions o = attnfuseCompileOptionsCreate();
  attnfuseCompileOptionsSetPipeline(
      o, str("builtin.module(convert-attn-to-scf{block-q=4 block-k=2})"));
  AttnfuseCompilation c = attnfuseCompile(str(kAttention), o);
  MlirStringRef ir = attnfuseCompilationGetIR(c);
  // CHECK-LABEL: testPipeline
  // 8 queries in blocks of 4: 2 query blocks per (batch, head).
  // CHECK: succeeded 1, 2 query blocks 1
  printf("succeeded %d, 2 query blocks %d\n",
         attnfuseCompilationSucceeded(c), contains(ir, "in (1, 2, 2)"));
  attnfuseCompilationDestroy(c);

  attnfuseCompileOptionsSetPipeline(o, str("no-such-pass"));
  c = attnfuseCompile(str(kAttention), o);
  // CHECK: succeeded 0, IR length 0
  // CHECK: diagnostic 0 at '': invalid pass pipeline 'no-such-pass': 'no-such-pass' does not refer to a registered pass or pass pipeline{{$}}
  printf("succeeded %d, IR length %d\n", attnfuseCompilationSucceeded(c),
         (int)attnfuseCompilationGetIR(c).length);
  printDiagnostics(c);
  attnfuseCompilationDestroy(c);
  attnfuseCompileOptionsDestroy(o);
}

// Parse and verifier errors come back as diagnostics with locations.
static void testErrors(void) {
  printf("testErrors\n");
  AttnfuseCompileOptions o = attnfuseCompileOptionsCreate();
  attnfuseCompileOptionsSetSourceName(o, str("bad.mlir"));
  AttnfuseCompilation c = attnfuseCompile(str("func.func @f() {\n  %x = \n"), o);
  // CHECK-LABEL: testErrors
  // CHECK: succeeded 0
  // CHECK-NEXT: diagnostic 0 at 'bad.mlir:2:7': expected operation name in quotes
  printf("succeeded %d\n", attnfuseCompilationSucceeded(c));
  printDiagnostics(c);
  attnfuseCompilationDestroy(c);

  attnfuseCompileOptionsSetBlockSizes(o, 0, 64);
  c = attnfuseCompile(str(kAttention), o);
  // CHECK: diagnostic 0 at '': block sizes must be positive, got block-q=0 block-k=64
  printDiagnostics(c);
  attnfuseCompilationDestroy(c);
  attnfuseCompileOptionsSetBlockSizes(o, 64, 64);

  attnfuseCompileOptionsSetEntry(o, str("missing"));
  c = attnfuseCompile(str(kAttention), o);
  // CHECK: diagnostic 0 at '': no function 'missing' with a body in the module
  printDiagnostics(c);
  attnfuseCompilationDestroy(c);

  attnfuseCompileOptionsSetEntry(o, str("f"));
  c = attnfuseCompile(
      str("func.func @f(%a: memref<4xf32>) { return }"), o);
  // CHECK: diagnostic 0 at 'bad.mlir:1:1': argument 0 of the entry function has type 'memref<4xf32>'; supported: ranked tensors and scalars
  // CHECK-NOT: diagnostic
  printDiagnostics(c);
  attnfuseCompilationDestroy(c);

  // Running a compilation that holds no function is an error, not a crash.
  c = attnfuseCompile(str(kAttention), (AttnfuseCompileOptions){NULL});
  AttnfuseRun r = attnfuseCompilationRun(c, 0, NULL);
  MlirStringRef e = attnfuseRunGetError(r);
  // CHECK: run succeeded 0: the compilation holds no executable function
  printf("run succeeded %d: %.*s\n", attnfuseRunSucceeded(r), (int)e.length,
         e.data);
  attnfuseRunDestroy(r);
  attnfuseCompilationDestroy(c);
  attnfuseCompileOptionsDestroy(o);
}

// JIT and run, checked against a direct computation of softmax(Q K^T / 2) V.
static void testRun(void) {
  printf("testRun\n");
  AttnfuseCompileOptions o = attnfuseCompileOptionsCreate();
  attnfuseCompileOptionsSetEntry(o, str("attention"));
  AttnfuseCompilation c = attnfuseCompile(str(kAttention), o);
  attnfuseCompileOptionsDestroy(o);
  // CHECK-LABEL: testRun
  // CHECK: executable 1, inputs 3, results 1, input 0 rank 4 shape 1x2x8x4
  AttnfuseTensor t = attnfuseCompilationGetInputType(c, 0);
  printf("executable %d, inputs %d, results %d, input 0 rank %d shape "
         "%dx%dx%dx%d\n",
         attnfuseCompilationIsExecutable(c),
         (int)attnfuseCompilationGetNumInputs(c),
         (int)attnfuseCompilationGetNumResults(c), (int)t.rank,
         (int)t.shape[0], (int)t.shape[1], (int)t.shape[2], (int)t.shape[3]);

  float q[64], k[64], v[64];
  for (int i = 0; i < 64; ++i) {
    q[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
    k[i] = (float)((i * 5) % 13) / 13.0f - 0.5f;
    v[i] = (float)((i * 3) % 17) / 17.0f;
  }
  int64_t shape[4] = {1, 2, 8, 4};
  AttnfuseTensor args[3] = {{AttnfuseElementTypeF32, 4, shape, q},
                            {AttnfuseElementTypeF32, 4, shape, k},
                            {AttnfuseElementTypeF32, 4, shape, v}};
  AttnfuseRun r = attnfuseCompilationRun(c, 3, args);
  // CHECK: run succeeded 1, results 1
  printf("run succeeded %d, results %d\n", attnfuseRunSucceeded(r),
         (int)attnfuseRunGetNumResults(r));
  AttnfuseTensor out = attnfuseRunGetResult(r, 0);
  const float *o32 = (const float *)out.data;
  double maxErr = 0;
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 8; ++i) {
      double s[8], m = -INFINITY, l = 0;
      for (int j = 0; j < 8; ++j) {
        s[j] = 0;
        for (int d = 0; d < 4; ++d)
          s[j] += q[(h * 8 + i) * 4 + d] * k[(h * 8 + j) * 4 + d];
        s[j] *= 0.5; // 1/sqrt(4)
        m = s[j] > m ? s[j] : m;
      }
      for (int j = 0; j < 8; ++j)
        l += exp(s[j] - m);
      for (int d = 0; d < 4; ++d) {
        double want = 0;
        for (int j = 0; j < 8; ++j)
          want += exp(s[j] - m) / l * v[(h * 8 + j) * 4 + d];
        double err = fabs(want - o32[(h * 8 + i) * 4 + d]);
        maxErr = err > maxErr ? err : maxErr;
      }
    }
  // CHECK: result type 2 rank 4, matches reference 1
  printf("result type %d rank %d, matches reference %d\n",
         (int)out.elementType, (int)out.rank, maxErr < 1e-5);
  attnfuseRunDestroy(r);

  // Wrong shape and element type: rejected before the call.
  int64_t bad[4] = {1, 2, 8, 5};
  args[1].shape = bad;
  r = attnfuseCompilationRun(c, 3, args);
  // CHECK: argument 1 of 'attention' must be tensor<1x2x8x4xf32>, got tensor<1x2x8x5xf32>
  printf("%.*s\n", (int)attnfuseRunGetError(r).length,
         attnfuseRunGetError(r).data);
  attnfuseRunDestroy(r);
  args[1].shape = shape;
  args[2].elementType = AttnfuseElementTypeF16;
  r = attnfuseCompilationRun(c, 3, args);
  // CHECK: argument 2 of 'attention' must be tensor<1x2x8x4xf32>, got tensor<1x2x8x4xf16>
  printf("%.*s\n", (int)attnfuseRunGetError(r).length,
         attnfuseRunGetError(r).data);
  attnfuseRunDestroy(r);
  r = attnfuseCompilationRun(c, 2, args);
  // CHECK: 'attention' takes 3 arguments, got 2
  printf("%.*s\n", (int)attnfuseRunGetError(r).length,
         attnfuseRunGetError(r).data);

  // Indices out of range give the documented invalid values (they threw
  // std::out_of_range through C, or read out of bounds).
  // CHECK: out of range: input rank -1 null 1, scalar 0, result rank -1 null 1, run result rank -1 null 1, diagnostic null 1, kernel args -1, kernel arg type null 1
  AttnfuseTensor badInput = attnfuseCompilationGetInputType(c, 3);
  AttnfuseTensor badResult = attnfuseCompilationGetResultType(c, -1);
  AttnfuseTensor badRunResult = attnfuseRunGetResult(r, 7);
  AttnfuseDiagnostic badDiagnostic = attnfuseCompilationGetDiagnostic(c, 100);
  AttnfuseKernel badKernel = attnfuseCompilationGetKernel(c, 0);
  MlirStringRef badArg = attnfuseCompilationGetKernelArgumentType(c, 0, 0);
  printf("out of range: input rank %d null %d, scalar %d, result rank %d null "
         "%d, run result rank %d null %d, diagnostic null %d, kernel args %d, "
         "kernel arg type null %d\n",
         (int)badInput.rank, badInput.shape == NULL,
         attnfuseCompilationIsScalarInput(c, 3), (int)badResult.rank,
         badResult.shape == NULL, (int)badRunResult.rank,
         badRunResult.data == NULL, badDiagnostic.message.data == NULL,
         (int)badKernel.numArguments, badArg.data == NULL);
  attnfuseRunDestroy(r);
  attnfuseCompilationDestroy(c);
}

static void printCallback(MlirStringRef text, void *userData) {
  (void)userData;
  printf("%.*s", (int)text.length, text.data);
}

// The C API pass manager with attnfuse's pipeline added (its options show in
// the printed pipeline), run on an empty module.
static void testPassManager(void) {
  printf("testPassManager\n");
  MlirContext ctx = mlirContextCreate();
  MlirModule module = mlirModuleCreateEmpty(mlirLocationUnknownGet(ctx));
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  attnfuseBuildLowerToCPUPipeline(mlirPassManagerGetAsOpPassManager(pm), false,
                                  32, 16);
  // CHECK-LABEL: testPassManager
  // CHECK: convert-attn-to-scf{block-k=16 block-q=32}
  // CHECK-SAME: one-shot-bufferize
  // CHECK-SAME: reconcile-unrealized-casts
  mlirPrintPassPipeline(mlirPassManagerGetAsOpPassManager(pm), printCallback,
                        NULL);
  MlirLogicalResult result =
      mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module));
  // CHECK: pipeline succeeded 1
  printf("\npipeline succeeded %d\n", mlirLogicalResultIsSuccess(result));
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
}

int main(void) {
  testRegistration();
  testCompile();
  testPipeline();
  testErrors();
  testRun();
  testPassManager();
  return 0;
}
