"""The Python, LangGraph and OpenAI Agents SDK examples of README.md's "Use it from your
stack", run as written against the real API (uvicorn on loopback), servers and worker: only
the base URL and the token are the test's, and the agent's model is the Agents SDK's own
scripted model (`agents.testing.ScriptedModel`) instead of an LLM."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest
from agents.testing import ScriptedModel, assistant_message, function_call

from continuum.pipeline.outbox import embed_pending
from continuum.security.tokens import create_token
from tests.support.readme import readme_block
from tests.support.wait import wait_for

EXAMPLE_URL, EXAMPLE_TOKEN = '"http://127.0.0.1:8000"', '"ctm_..."'


def _run(heading: str, api_url: str, **names: Any) -> str:
    """Run the README's example under `heading` against the test's API; its printed output."""
    code = readme_block(heading, "python")
    assert EXAMPLE_URL in code and EXAMPLE_TOKEN in code
    token = create_token(["pearl"])[0]
    code = code.replace(EXAMPLE_URL, repr(api_url)).replace(EXAMPLE_TOKEN, repr(token))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, heading, "exec"), {"__name__": "readme", **names})
    return printed.getvalue()


def test_the_python_example(db: Any, api_url: str, worker: Any) -> None:
    from continuum.sdk import Client

    out = _run("### Python", api_url)
    assert "fact Garden contractor: Hoffmann does the garden." in out
    with Client(api_url, create_token(["pearl"])[0]) as client:  # the turn landed too
        wait_for(lambda: list(client.messages("Hoffmann garden", session_id="web-42")))


def test_the_langgraph_example(db: Any, api_url: str) -> None:
    out = _run("### LangGraph", api_url).splitlines()
    assert out[0] == "{'text': 'Hoffmann does the garden.'}"
    assert out[1].startswith("garden ") and out[1].endswith(" Hoffmann does the garden.")
    assert out[2] == "[('memories', 'jason')]"
    embed_pending()  # by meaning too, once the outbox ran
    assert _run("### LangGraph", api_url).splitlines()[1].startswith("garden ")


def test_the_agents_sdk_example(
    db: Any, api_url: str, worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel(
        [
            [
                function_call(
                    "remember",
                    {"key": "favorite_color", "value": "green", "memory_type": "preference"},
                    call_id="c1",
                )
            ],
            [assistant_message("Noted: green.")],
        ]
    )
    import agents

    class ScriptedAgent(agents.Agent[Any]):
        def __init__(self, **options: Any) -> None:
            super().__init__(model=model, **options)

    monkeypatch.setattr(agents, "Agent", ScriptedAgent)  # what `from agents import Agent` gets
    out = _run("### OpenAI Agents SDK", api_url).splitlines()
    assert out[0] == "Noted: green."
    assert "function_call_output" in out[1] and "Noted: green." in out[1]
