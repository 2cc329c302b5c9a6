"""The `continuum` command."""
