"""`continuum search` (hybrid search over memories and messages) and the embeddings it runs
on: `embed` (fill the outbox inline) and `reembed` (clear every vector after a model change)."""

from __future__ import annotations

import typer

from continuum.cli.common import (
    JsonOption,
    NamespaceOption,
    TzOption,
    UserOption,
    console,
    escape,
    local_zone,
    print_json,
)

app = typer.Typer()


@app.command()
def search(
    query: str,
    namespace: str = NamespaceOption,
    limit: int = typer.Option(10, "--limit"),
    user_id: str = UserOption,
    kind: list[str] = typer.Option([], "--kind", help="Memory kind (repeatable)."),
    tag: list[str] = typer.Option([], "--tag", help="Required tag (repeatable)."),
    memories_only: bool = typer.Option(False, "--memories-only"),
    as_json: bool = JsonOption,
    tz: str = TzOption,
) -> None:
    """Hybrid search (meaning + words) over memories and messages, with source message ids."""
    from continuum.recall.rankings import Source
    from continuum.recall.scope import SearchFilters
    from continuum.recall.search import search as hybrid_search

    filters = SearchFilters(user_id=user_id, kinds=tuple(kind), tags=tuple(tag))
    sources: tuple[Source, ...] = ("memory",) if memories_only else ("memory", "message")
    zone = local_zone(namespace, tz)
    hits = hybrid_search(namespace, query, limit=limit, filters=filters, sources=sources, tz=zone)
    if as_json:
        print_json([hit.as_dict() for hit in hits])
        return
    for hit in hits:
        console().print(
            f"[dim]{hit.score:.4f} {hit.created_at.astimezone(zone):%Y-%m-%d %H:%M}[/] [cyan]{hit.source}:{escape(hit.kind)}[/] "
            f"{escape(hit.content)} [dim]← {escape(', '.join(hit.source_message_ids))}[/]",
            highlight=False,
        )


@app.command()
def embed(time_budget: float = typer.Option(600.0, help="Seconds to spend at most.")) -> None:
    """Fill the embedding outbox inline (workers do this on their own)."""
    from continuum.pipeline.outbox import embed_pending

    with console().status("Embedding…"):
        result = embed_pending(time_budget_s=time_budget)
    console().print(f"[green]✓[/] embedded {result.embedded} in {result.seconds:.1f}s")


@app.command()
def reembed() -> None:
    """Clear every vector (e.g. after changing the embedding model); workers refill them."""
    from continuum.contract.dispatch import send
    from continuum.contract.queues import EMBED_PENDING
    from continuum.pipeline.outbox import reset_embeddings

    cleared = reset_embeddings()
    send(EMBED_PENDING)
    console().print(f"[green]✓[/] cleared {cleared}; re-embedding queued")
