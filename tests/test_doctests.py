"""Every docstring example in the package runs (STYLE §3.5: examples are doctests run in CI).

Examples show the library's default dtypes (float32); the tests run in float64, so the checker ignores
the ``dtype=float32`` / ``dtype=float64`` of printed arrays.
"""

import doctest
import importlib
import pkgutil
import re

import pytest

import ocokit

pytestmark = pytest.mark.integration

MODULES = sorted(m.name for m in pkgutil.walk_packages(ocokit.__path__, prefix="ocokit."))
_DTYPE = re.compile(r",\s*dtype=float(32|64)")


class _DtypeAgnostic(doctest.OutputChecker):
    def check_output(self, want, got, optionflags):
        return super().check_output(_DTYPE.sub("", want), _DTYPE.sub("", got), optionflags)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    runner = doctest.DocTestRunner(checker=_DtypeAgnostic(), optionflags=flags, verbose=False)
    for test in doctest.DocTestFinder().find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} doctest failures in {name}"
