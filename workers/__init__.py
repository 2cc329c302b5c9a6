"""Celery workers: `celery -A workers worker` (or `continuum worker`) runs them."""

from workers.app import app

__all__ = ["app"]
