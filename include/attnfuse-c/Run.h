/*===-- attnfuse-c/Run.h - the attnfuse-run command ---------------*- C -*-===*\
|*                                                                            *|
|* The attnfuse-run command as a function of libAttnFuseCAPI.so: the tool is  *|
|* a stub that calls it, so the tool and the Python package share one copy   *|
|* of the compiler and the execution library (docs/Building.md).              *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef ATTNFUSE_C_RUN_H
#define ATTNFUSE_C_RUN_H

#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Runs attnfuse-run with the command line `argv` (docs/attnfuse-run.md):
/// a function of an MLIR file through attnfuse's pipeline on the CPU or a
/// GPU, its results checked. Returns the exit status: 0 when every
/// comparison passes, 1 when one fails, 2 on errors. It parses LLVM's
/// command line: once per process.
MLIR_CAPI_EXPORTED int attnfuseRunMain(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif // ATTNFUSE_C_RUN_H
