"""The embedded two-phase incident environment (knows nothing of policies or notebooks)."""
