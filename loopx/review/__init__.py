"""Reviewing state like code: log and diff, and validate (may a range of state commits be merged?)."""
