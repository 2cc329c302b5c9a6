"""The `continuum` command line: `main` builds the app from one module per area (servers,
events, processes, messages, search, sessions, sync, recall, memory, api) and `common` holds
what they share."""
