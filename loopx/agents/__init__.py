"""Agents and their tools: an agent tool set up to use loopx (setup), its session transcripts, the wake runner (wait, watch)."""
