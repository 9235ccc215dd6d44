"""Griffe extension: read a Google-style ``Example:`` section (ocokit's style) as ``Examples:``.

Griffe's Google parser knows only the plural title; without this, the doctests of an ``Example:`` section would
render as prose instead of code.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_TITLE = re.compile(r"^(\s*)Example:\s*$", flags=re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename every ``Example:`` section title to ``Examples:`` before the docstring is parsed."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and "Example:" in obj.docstring.value:
            obj.docstring.value = _TITLE.sub(r"\1Examples:", obj.docstring.value)
