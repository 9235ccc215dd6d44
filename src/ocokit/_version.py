"""The version of ocokit, written once: the package metadata reads it from here (``pyproject.toml``)."""

__version__ = "0.1.0"
