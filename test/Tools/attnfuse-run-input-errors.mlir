// What the runner does with the program's own failures and with loose
// inputs: a failed cf.assert is a reported runtime error (exit 2, no crash
// dump); --keep-probability must be a probability; a .npy file with bytes
// after its array is refused.
// RUN: %python -c "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode != 2)" attnfuse-run %s --entry=asserts --keep-probability=0 > %t.assert.out 2> %t.assert
// RUN: FileCheck %s --check-prefix=ASSERT < %t.assert
// RUN: FileCheck %s --check-prefix=MESSAGE < %t.assert.out
// RUN: attnfuse-run %s --entry=asserts --keep-probability=1 | FileCheck %s --check-prefix=HOLDS
// RUN: %python -c "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode != 2)" attnfuse-run %s --entry=asserts --keep-probability=2 2> %t.p2
// RUN: FileCheck %s --check-prefix=PROB -DVALUE=2 < %t.p2
// RUN: %python -c "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode != 2)" attnfuse-run %s --entry=asserts --keep-probability=-1 2> %t.pm1
// RUN: FileCheck %s --check-prefix=PROB -DVALUE=-1 < %t.pm1
// RUN: %python -c "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode != 2)" attnfuse-run %s --entry=asserts --keep-probability=nan 2> %t.pnan
// RUN: FileCheck %s --check-prefix=PROB -DVALUE=nan < %t.pnan
// RUN: %python -c "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode != 2)" attnfuse-run %s --entry=asserts --keep-probability=inf 2> %t.pinf
// RUN: FileCheck %s --check-prefix=PROB -DVALUE=inf < %t.pinf
// RUN: %python -c "import numpy as np, sys; np.save(sys.argv[1], np.ones(4, np.float32)); open(sys.argv[1], 'ab').write(b'\0' * 8)" %t.trailing.npy
// RUN: %python -c "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode != 2)" attnfuse-run %s --entry=copy --inputs=%t.trailing.npy 2> %t.trailing
// RUN: FileCheck %s --check-prefix=TRAILING < %t.trailing

// ASSERT: attnfuse-run: error: cannot run the under-test pipeline: @_mlir_ciface_asserts aborted: the program called abort (a cf.assert that failed; its message is on standard output)
// ASSERT-NOT: PLEASE submit a bug report
// ASSERT-NOT: Stack dump
// MESSAGE: boom
// HOLDS: @asserts check=naive: PASS
func.func @asserts(%a: i1) -> tensor<1xf32> {
  cf.assert %a, "boom"
  %c = arith.constant dense<1.0> : tensor<1xf32>
  return %c : tensor<1xf32>
}

// PROB: attnfuse-run: error: --keep-probability must be a probability in [0, 1], got [[VALUE]]

// TRAILING: attnfuse-run: error: argument 0 of @copy: {{.*}}8 bytes after the data of the (4,) array
func.func @copy(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
