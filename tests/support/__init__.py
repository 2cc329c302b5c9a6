"""What test modules share: builders, canned data, helpers and paths, one module per concern.
Test modules import from here, never from each other or from a conftest."""
