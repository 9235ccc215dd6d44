"""The XLA flags of the test processes: ``conftest.py`` and ``golden/generate.py`` set them before importing JAX.

- ``--xla_backend_optimization_level=0``: the suite spends most of its time compiling small programs; XLA's
  cheapest backend optimisation level compiles them about 1.5x faster and changes no result.
- ``--xla_cpu_max_isa=AVX2`` (x86 only): XLA's CPU code generator and its matrix kernels pick their vector
  instructions from the host CPU, and AVX-512 code rounds differently from AVX2 code. The golden numbers
  (``tests/golden``) are pinned to 1e-12. On an AVX-512 machine, SCBFW-TVC's summary on the small FilmTrust
  file (paper 000; nuclear-ball Frank-Wolfe steps from one-point estimates) moved by 1e-3, while every other
  learner of that run agreed to 1e-14, and with this cap all goldens held there. Capping the
  instruction set at AVX2 compiles the code that machines without AVX-512, where the goldens were made, run.
- ``--xla_cpu_use_fusion_emitters=false``: XLA's older loop emitter instead of its MLIR fusion emitters, which
  compile each fused kernel through a pipeline of their own (as ``ocokit run`` compiles short sweeps:
  :data:`ocokit.engine._SHORT_SWEEP`). The whole suite ran in 8.3 instead of 12.7 minutes on a 2-core machine
  (CPU 14.0 against 22.7 minutes), every result agreeing to rounding but one kind: a float32
  ``jax.random.normal`` drawn inside a fused scan can round one float32 ulp away from the same draw made alone,
  which BFW-TVC's and SCBFW-TVC's sphere directions amplify. Their golden trajectories and the FilmTrust
  experiment's golden summary were generated with this flag (when it came, the trajectories moved by up to 3.5e-7
  of each array's scale, SCBFW-TVC's FilmTrust means by up to 5.1e-4 relative);
  their NumPy references, which regenerate the directions alone, compile the runs with the fusion emitters
  (``tests/algorithms/test_bandit_tvc_reference.py``).

A user's own ``XLA_FLAGS`` win.
"""

import platform

FLAGS = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
if platform.machine().lower() in ("x86_64", "amd64"):
    FLAGS += " --xla_cpu_max_isa=AVX2"
