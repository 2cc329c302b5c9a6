"""The read plane: hybrid search, full-text planning, time phrases, the context block, listings."""
