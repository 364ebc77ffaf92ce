"""Keeping a ledger healthy: doctor and salvage, and the generated schemas."""
