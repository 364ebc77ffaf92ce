"""The state branch and its remotes: sync, the incoming check, inboxes, what a push may send."""
