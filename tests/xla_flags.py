"""The XLA flags of the test processes: ``conftest.py`` and ``golden/generate.py`` set them before importing JAX.

- ``--xla_backend_optimization_level=0``: the suite spends most of its time compiling small programs; XLA's
  cheapest backend optimisation level compiles them about 1.5x faster and changes no result.
- ``--xla_cpu_max_isa=AVX2`` (x86 only): XLA's CPU code generator and its matrix kernels pick their vector
  instructions from the host CPU, and AVX-512 code rounds differently from AVX2 code. The golden numbers
  (``tests/golden``) are pinned to 1e-12. On an AVX-512 machine, SCBFW-TVC's summary on the small FilmTrust
  file (paper 000; nuclear-ball Frank-Wolfe steps from one-point estimates) moved by 1e-3, while every other
  learner of that run agreed to 1e-14, and with this cap all goldens held there. Capping the
  instruction set at AVX2 compiles the code that machines without AVX-512, where the goldens were made, run.

A user's own ``XLA_FLAGS`` win.
"""

import platform

FLAGS = "--xla_backend_optimization_level=0"
if platform.machine().lower() in ("x86_64", "amd64"):
    FLAGS += " --xla_cpu_max_isa=AVX2"
