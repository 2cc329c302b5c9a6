"""Continuum: a durable memory pipeline for AI agents."""

__version__ = "0.1.0"
