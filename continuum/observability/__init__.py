"""What an operator sees of the pipeline from outside: traces (`tracing`, OpenTelemetry, an
optional extra). Metrics live with the store (`continuum.store.metrics`) and `/metrics`."""
