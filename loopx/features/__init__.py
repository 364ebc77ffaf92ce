"""Features: one job each (sync, capture, review, readback, CI, sessions, doctor)."""
