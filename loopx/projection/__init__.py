"""State: pure. Entity types, checks, apply, views, authority, decide(); no git, no I/O."""
