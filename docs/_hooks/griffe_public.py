"""Griffe extension: the reference names only public objects where it shows a class's bases or a signature.

A public class may derive from a private one (``L1Ball`` from ``_AbstractNormBall``), a signature's default may
be a private module constant (``positive_windows=_POSITIVE_WINDOWS``) and an annotation a private state class.
The code keeps those names (other modules import them); what the site shows is rewritten here, display only:

* bases: a private base is replaced by its own bases, recursively (``L1Ball``: ``AbstractSet``). The class's
  real bases, its MRO and its inherited members are untouched: the list shown is stored apart, in
  ``extra["ocokit"]["public_bases"]``, and read by the ``bases`` block of ``docs/_templates``;
* defaults: a default that is a private constant of the package shows the constant's value;
* annotations: an annotation that is a private class of the package is not shown.
"""

from __future__ import annotations

from typing import Any

import griffe


def _private(expression: Any) -> bool:
    """Whether ``expression`` is a bare name (``_Name`` or ``pkg._mod._Name``) whose last part is private."""
    return isinstance(expression, griffe.ExprName | griffe.ExprAttribute) and str(expression).split(".")[-1][:1] == "_"


def _target(expression: Any, collection: Any) -> Any:
    """The object ``expression`` names, or ``None`` outside the loaded package."""
    try:
        obj = collection.get_member(expression.canonical_path)
        return obj.final_target if obj.is_alias else obj
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def _private_class(expression: Any, collection: Any) -> bool:
    """Whether ``expression`` is a bare name of a private class of the loaded package."""
    return _private(expression) and getattr(_target(expression, collection), "is_class", False)


def _public_bases(cls: griffe.Class, collection: Any) -> list[Any]:
    shown = []
    for base in cls.bases:
        target = _target(base, collection) if _private(base) else None
        if target is not None and target.is_class:
            shown += [b for b in _public_bases(target, collection) if str(b) not in map(str, shown)]
        else:
            shown.append(base)
    return shown


def _objects(obj: griffe.Object):
    """``obj`` and every object defined under it (aliases, i.e. imports, are skipped)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)


class PublicNames(griffe.Extension):
    """Rewrite the shown bases, defaults and annotations that name private objects (see the module)."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        collection = loader.modules_collection
        for obj in _objects(pkg):
            if obj.is_class and any(_private(base) for base in obj.bases):
                obj.extra["ocokit"]["public_bases"] = _public_bases(obj, collection)
            if not obj.is_function:
                continue
            for parameter in obj.parameters:
                if _private(parameter.default):
                    constant = _target(parameter.default, collection)
                    if constant is not None and constant.is_attribute and constant.value is not None:
                        parameter.default = constant.value
                if _private_class(parameter.annotation, collection):
                    parameter.annotation = None
            if _private_class(obj.returns, collection):
                obj.returns = None
