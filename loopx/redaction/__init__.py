"""Secret redaction of every free text loopx writes, and the secret shapes it knows. Pure (no I/O, no network)."""
