"""The one place fairpack's version lives."""

__version__ = "0.1.0"
