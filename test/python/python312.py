# REQUIRES: python312
# The same build of the package on Python 3.12 (the build uses another one).
# RUN: %other_python -c "import sys; assert sys.version_info[:2] == (3, 12), sys.version"
# RUN: %other_python %S/compile.py | FileCheck %S/compile.py
# RUN: %other_python %S/run_cpu.py | FileCheck %S/run_cpu.py
