"""The package version (read by hatchling for the distribution's metadata)."""

__version__ = "0.1.0"
