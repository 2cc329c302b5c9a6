"""Celery tasks: thin wrappers that decode a message and call `continuum.*`."""
