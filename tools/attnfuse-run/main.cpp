//===- main.cpp - the attnfuse-run executable -----------------------------===//
//
// The command lives in libAttnFuseCAPI.so (attnfuseRunMain, attnfuse-run.cpp
// and the files beside it), which the Python package loads too: one copy of
// the compiler for both.
//
//===----------------------------------------------------------------------===//
#include "attnfuse-c/Run.h"

int main(int argc, char **argv) { return attnfuseRunMain(argc, argv); }
