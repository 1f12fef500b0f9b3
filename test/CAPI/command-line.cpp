//===- command-line.cpp - the C API library registers no LLVM options -----===//
//
// A program with LLVM command-line options named as attnfuse-run's
// (--entry, --target, --seed, --check) that links libAttnFuseCAPI.so, whose
// attnfuse-run command (attnfuseRunMain) registers its options only when it
// runs: loading the library must not register them (over a shared libLLVM,
// LLVM would abort with "Option 'entry' registered more than once").
// command-line.test runs it.
//
//===----------------------------------------------------------------------===//
#include "attnfuse-c/Compiler.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

static llvm::cl::opt<std::string> entry("entry", llvm::cl::init("none"));
static llvm::cl::opt<std::string> target("target", llvm::cl::init("none"));
static llvm::cl::opt<int> seed("seed", llvm::cl::init(0));
static llvm::cl::opt<std::string> check("check", llvm::cl::init("none"));

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(argc, argv);
  // (A call into the library, so that it is loaded and used.)
  AttnfuseCompileOptions options = attnfuseCompileOptionsCreate();
  attnfuseCompileOptionsDestroy(options);
  llvm::outs() << "entry=" << entry << " target=" << target
               << " seed=" << seed << " check=" << check << "\n";
  return 0;
}
