"""Recovery: a fresh look at the world (readback, the CI providers) and the handoff texts built from it (brief, prime)."""
