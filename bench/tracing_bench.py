"""What tracing costs ingest: one worker process ingesting turn events in batches of 25 (as
the pipeline section measures it: the load queued first, timed from the worker's first
completion) in the build without the `otel` extra (its packages unimportable in the worker,
`bench.without_otel`), with the extra installed and tracing off, and with tracing on, every
span exported over OTLP/HTTP to a local stand-in for a collector (it answers each export and
counts its spans). Rounds alternate between the three; each reports its best round: the
highest rate and the fewest worker CPU seconds an event (the figure other load on a shared
machine slows down least). The target: tracing off costs less than 2 % of the throughput
without the extra."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.common import Options, Section, alternating
from bench.pipeline_bench import Drained, WorkerSetup, ingest
from continuum.contract.client import MemoryClient

ROUNDS = 5


class Collector:
    """An OTLP/HTTP trace receiver on loopback that keeps nothing but a count of spans."""

    def __init__(self) -> None:
        self.spans = 0
        self.url = ""

    def received(self, body: bytes) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        request = ExportTraceServiceRequest.FromString(body)
        self.spans += sum(
            len(scope.spans)
            for resource in request.resource_spans
            for scope in resource.scope_spans
        )


@contextmanager
def collector() -> Iterator[Collector]:
    sink = Collector()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            sink.received(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    sink.url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield sink
    finally:
        server.shutdown()
        server.server_close()


def run(urls: dict[str, str], options: Options) -> list[Section]:
    n = 1000 if options.quick else 5000
    client = MemoryClient(urls["broker_url"])
    logs = Path(tempfile.mkdtemp(prefix="continuum-bench-tracing-"))
    no_embeddings = {"CONTINUUM_EMBEDDING_PROVIDER": "none"}  # as the pipeline section
    with collector() as sink:
        setups = {
            "without": WorkerSetup("bench.without_otel", no_embeddings),
            "off": WorkerSetup("celery", {**no_embeddings, "CONTINUUM_OTEL": "false"}),
            "on": WorkerSetup(
                "celery",
                {**no_embeddings, "CONTINUUM_OTEL": "true", "OTEL_SERVICE_NAME": "bench",
                 "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": sink.url},
            ),
        }  # fmt: skip

        drained: dict[str, list[Drained]] = {name: [] for name in setups}

        def measure(name: str) -> Callable[[int], float]:
            def one_round(_: int) -> float:
                drained[name].append(ingest(client, 1, n, logs, setups[name]))
                return drained[name][-1].rate

            return one_round

        rates = alternating(
            3 if options.quick else ROUNDS, {name: measure(name) for name in setups}
        )
        rounds = len(drained["on"])
        spans_per_event = sink.spans / (rounds * n)
    client.close()
    cpu_us = {name: min(d.cpu_s_each for d in runs) * 1e6 for name, runs in drained.items()}
    section = Section(
        f"Tracing's cost on ingest (1 worker process, {n} turn events, batches of 25)"
    )
    section.add(
        "worker CPU µs/event, tracing off (extra installed)",
        cpu_us["off"],
        cpu_us["without"],
        "µs",
        "build without the otel extra (target: ≤ 1.02×)",
    )
    section.add(
        "worker CPU µs/event, tracing on (OTLP/HTTP to a local collector)",
        cpu_us["on"],
        cpu_us["off"],
        "µs",
        "tracing off",
    )
    section.add(
        "events/s, tracing off (extra installed)",
        rates["off"],
        rates["without"],
        "events/s",
        "build without the otel extra (target: ≥ 0.98×)",
    )
    section.add("events/s, tracing on", rates["on"], rates["off"], "events/s", "tracing off")
    section.add("spans exported per event, tracing on", spans_per_event, None, "spans")
    return [section]
