"""Parsing of experiment options (``--option key=value``): a choice among names, a true/false flag, an integer."""

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


def integer(options: Mapping[str, str], key: str, default: int, low: int = 1) -> int:
    """``options[key]`` read as an integer ``>= low`` (``default`` when absent); ``ValueError`` naming the option."""
    value = options.get(key)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"option {key} must be an integer >= {low}, got {value!r}") from None
    if number < low:
        raise ValueError(f"option {key} must be an integer >= {low}, got {number}")
    return number
