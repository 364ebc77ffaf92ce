"""The git hooks: the shims loopx installs, the evidence they capture, the queue of work they could not do at once, the commits they missed."""
