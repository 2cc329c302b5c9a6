"""A LangGraph agent whose long-term memory is Continuum, and that needs no LLM: one node reads
the user's message, remembers a stated favorite in the store (`ContinuumStore`, over the HTTP
API) and answers a question about it from the store, in any thread.

    python examples/langgraph_agent.py http://127.0.0.1:8000 ctm_...

The store maps the namespace ("memories", user) to the token's tenant and that user
(`user_label=1`), so what the agent remembers is the user's: searchable, in their context
blocks, forgotten with them. tests/adapters/test_langgraph.py runs `demo`.
"""

from __future__ import annotations

import re
import sys
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

STATED = re.compile(r"my favou?rite (\w+) is (\w+)", re.IGNORECASE)
ASKED = re.compile(r"what is my favou?rite (\w+)", re.IGNORECASE)


class State(TypedDict):
    user_id: str
    message: str
    reply: str


def respond(state: State) -> dict[str, str]:
    """Remember a stated favorite, or answer a question about one from the store."""
    store, namespace = get_store(), ("memories", state["user_id"])
    if stated := STATED.search(state["message"]):
        thing, value = stated.groups()
        store.put(
            namespace, f"favorite_{thing}", {"text": f"favorite {thing} is {value}", "value": value}
        )
        return {"reply": f"Noted: your favorite {thing} is {value}."}
    if asked := ASKED.search(state["message"]):
        found = store.search(
            namespace, query=state["message"], filter={"value": {"$ne": None}}, limit=1
        )
        if found:
            return {"reply": f"Your favorite {asked.group(1)} is {found[0].value['value']}."}
        return {"reply": "I don't know yet."}
    return {"reply": "Tell me about your favorites."}


def build_graph(store: BaseStore) -> Any:
    graph = StateGraph(State)
    graph.add_node("respond", respond)
    graph.add_edge(START, "respond")
    graph.add_edge("respond", END)
    return graph.compile(checkpointer=InMemorySaver(), store=store)


def demo(store: BaseStore, user_id: str = "jason") -> list[str]:
    """Tell the agent a favorite in one thread, ask for it in another."""
    agent = build_graph(store)
    said = agent.invoke({"user_id": user_id, "message": "My favorite color is green."},
                        {"configurable": {"thread_id": "monday"}})  # fmt: skip
    asked = agent.invoke({"user_id": user_id, "message": "What is my favorite color?"},
                         {"configurable": {"thread_id": "tuesday"}})  # fmt: skip
    return [said["reply"], asked["reply"]]


if __name__ == "__main__":
    from continuum.adapters.langgraph import ContinuumStore
    from continuum.sdk import Client

    url, token = sys.argv[1], sys.argv[2]
    with Client(url, token) as client:
        print("\n".join(demo(ContinuumStore(client, user_label=1))))
