"""Versions, importable from any layer without importing anything else."""

__version__ = "0.1.0"
SCHEMA_VERSION = 4  # bump when any event payload's meaning changes; keys the projection cache
