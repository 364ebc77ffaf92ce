"""Model and codec: event types, envelope, ids, time; safe YAML in, canonical YAML out."""
