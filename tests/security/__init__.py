"""Tests of encryption at rest and forgetting (`continuum.security`)."""
