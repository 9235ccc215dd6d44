"""Parsing of experiment options (``--option key=value``): a choice among names, and a true/false flag."""

from __future__ import annotations

from collections.abc import Mapping


def choice(options: Mapping[str, str], key: str, allowed: tuple[str, ...], default: str) -> str:
    """``options[key]`` (``default`` when absent); ``ValueError`` unless it is one of ``allowed``."""
    value = options.get(key, default)
    if value not in allowed:
        raise ValueError(f"option {key} must be one of {list(allowed)}, got {value!r}")
    return value


def flag(options: Mapping[str, str], key: str, default: bool) -> bool:
    """``options[key]`` read as a boolean (true/false, 1/0, yes/no; ``default`` when absent)."""
    value = options.get(key)
    if value is None:
        return default
    if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
        raise ValueError(f"option {key} must be true or false, got {value!r}")
    return value.lower() in ("true", "1", "yes")
