// Errors, not crashes, with exit status 2: an allocation that cannot be
// satisfied (a host buffer, a buffer of the JIT-compiled code), a shape whose
// size overflows, a NaN or negative tolerance (a NaN one made every check
// pass). Under AddressSanitizer too: host buffers come from malloc (its
// operator new aborts instead of failing, scripts/build-sanitized.sh).
// RUN: %python -c "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode != 2)" attnfuse-run %s --entry=host_buffer --check=none 2> %t.host
// RUN: FileCheck %s --check-prefix=OOM < %t.host
// RUN: %python -c "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode != 2)" attnfuse-run %s --entry=jit_buffer --check=none 2> %t.jit
// RUN: FileCheck %s --check-prefix=JIT < %t.jit
// RUN: %python -c "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode != 2)" attnfuse-run %s --entry=overflow 2> %t.overflow
// RUN: FileCheck %s --check-prefix=OVERFLOW < %t.overflow
// RUN: %python -c "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode != 2)" attnfuse-run %s --entry=small --atol=nan 2> %t.atol
// RUN: FileCheck %s --check-prefix=ATOL < %t.atol
// RUN: %python -c "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode != 2)" attnfuse-run %s --entry=small --rtol=-1 2> %t.rtol
// RUN: FileCheck %s --check-prefix=RTOL < %t.rtol
// RUN: attnfuse-run %s --entry=small --atol=inf | FileCheck %s --check-prefix=INF

// OOM: attnfuse-run: error: out of memory:
// OOM-NOT: LLVM ERROR
// 2^59 bytes: more than any address space.
func.func @host_buffer(%a: tensor<144115188075855872xf32>) -> tensor<144115188075855872xf32> {
  return %a : tensor<144115188075855872xf32>
}

// JIT: attnfuse-run: error: out of memory: a buffer of the JIT-compiled code
func.func @jit_buffer(%a: tensor<4xf32>) -> tensor<4x36028797018963968xf32> {
  %e = tensor.empty() : tensor<4x36028797018963968xf32>
  %r = linalg.broadcast ins(%a : tensor<4xf32>) outs(%e : tensor<4x36028797018963968xf32>) dimensions = [1]
  return %r : tensor<4x36028797018963968xf32>
}

// OVERFLOW: attnfuse-run: error: argument 0 of @overflow has more elements than a host buffer can hold: tensor<4611686018427387904x4xf32>
func.func @overflow(%a: tensor<4611686018427387904x4xf32>) -> tensor<4611686018427387904x4xf32> {
  return %a : tensor<4611686018427387904x4xf32>
}

// ATOL: attnfuse-run: error: --atol must be a non-negative number, got nan
// RTOL: attnfuse-run: error: --rtol must be a non-negative number, got -1
// INF: PASS
func.func @small(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
