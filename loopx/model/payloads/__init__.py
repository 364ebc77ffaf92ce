"""The payload models of events, one module per family of types (goals, todos, gates, ...).

:data:`loopx.model.events.EVENT_TYPES` maps each type to its model and imports a family's
module the first time one of its types is looked up, so that a command builds only the models
it needs (docs/design.md). ``base`` holds what they share.
"""
