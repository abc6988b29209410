"""The version, in a module that imports nothing, so any layer can read it."""

__version__ = "0.1.0"
