"""The XLA flags of the test processes: ``conftest.py`` and ``golden/generate.py`` set them before importing JAX.

- ``--xla_backend_optimization_level=0``: the suite spends most of its time compiling small programs; XLA's
  cheapest backend optimisation level compiles them about 1.5x faster and changes no result.
- ``--xla_cpu_max_isa=AVX2`` (x86 only): XLA's CPU code generator and its matrix kernels pick their vector
  instructions from the host CPU, and AVX-512 code rounds differently from AVX2 code. The golden numbers
  (``tests/golden``) are pinned to 1e-12. On an AVX-512 machine, SCBFW-TVC's summary on the small FilmTrust
  file (paper 000; nuclear-ball Frank-Wolfe steps from one-point estimates) moved by 1e-3, while every other
  learner of that run agreed to 1e-14, and with this cap all goldens held there. Capping the
  instruction set at AVX2 compiles the code that machines without AVX-512, where the goldens were made, run.

Not used: ``--xla_cpu_use_fusion_emitters=false`` (XLA's older loop emitter, as ``ocokit run`` compiles short
sweeps). It cut the whole suite from 17.8 to 12.3 minutes on a 2-core machine, but with it a float32
``jax.random.normal`` inside a fused scan differs from the same draw run alone by about 1e-7 (with the emitters on
they agree bit for bit): BFW-TVC's and SCBFW-TVC's sphere directions then differ from the ones their NumPy references
regenerate (``tests/algorithms/test_bandit_tvc_reference.py`` failed at 1e-10 by 4.5e-8), and their golden
trajectories moved by up to 5.7e-9 relative.

A user's own ``XLA_FLAGS`` win.
"""

import platform

FLAGS = "--xla_backend_optimization_level=0"
if platform.machine().lower() in ("x86_64", "amd64"):
    FLAGS += " --xla_cpu_max_isa=AVX2"
