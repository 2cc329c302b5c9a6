"""OpenAI-compatible chat client (httpx) asking for JSON validated by pydantic.

Works with OpenAI, xAI, vLLM, Ollama, llama.cpp server. Each call sends one prompt of
`continuum.inference.prompts` with `response_format: json_schema` (the endpoint constrains
the answer to the prompt's schema); an endpoint that refuses it (400/422) is asked again in
plain `json_object` mode, and the client keeps using that mode
(`CONTINUUM_LLM_RESPONSE_FORMAT=auto`; `json_schema` or `json_object` fix the mode).

Failures are classified: `LLMUnavailable` (timeouts, connection errors, 429 and 5xx: retry
later), `LLMBadOutput` (unparseable or off-schema answers, after one repair attempt:
nothing is stored from them) and `LLMOverBudget` (the tenant's daily token budget is spent:
no call). Callers always have the deterministic path to fall back on. Every call is
recorded per tenant with its tokens, latency and outcome (`continuum.inference.usage`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from functools import lru_cache
from typing import Any, Literal, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from continuum.config import get_settings
from continuum.inference import usage
from continuum.inference.prompts.base import Prompt
from continuum.inference.tokenizer import count_tokens
from continuum.observability import tracing
from continuum.store import metrics

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)
ResponseFormat = Literal["auto", "json_schema", "json_object"]
SCHEMA_REFUSED = (400, 422)  # how servers without json_schema support answer it
REPAIR = (
    "Your answer is not valid: {error}\nAnswer again with only the corrected JSON object "
    "matching the schema."
)
MAX_ECHOED_CHARS = 2000  # of the invalid answer and of its error, sent back for the repair


class LLMError(RuntimeError):
    """Base of LLM failures."""


class LLMUnavailable(LLMError):
    """Timeout, connection failure, 429 or 5xx: worth retrying later."""


class LLMTimeout(LLMUnavailable):
    """No complete answer within the call's deadline."""


class LLMBadOutput(LLMError):
    """The answer was not the JSON we asked for: do not store anything from it."""


class LLMOverBudget(LLMError):
    """The tenant's daily token budget is spent: no call was made."""


def _extract_json(content: str) -> object:
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise LLMBadOutput(f"answer is not JSON: {exc}; got {content[:200]!r}") from exc


def _parse(prompt: Prompt[T], content: str) -> T:
    try:
        return prompt.parse(_extract_json(content))
    except ValidationError as exc:
        raise LLMBadOutput(f"answer does not match the schema: {exc}") from exc


def _count_tokens(
    call: usage.CallRecord, reported: object, messages: list[dict[str, str]], content: str
) -> None:
    """Add a request's tokens: as the endpoint reports them, else estimated."""
    if isinstance(reported, dict):
        call.prompt_tokens += int(reported.get("prompt_tokens") or 0)
        call.completion_tokens += int(reported.get("completion_tokens") or 0)
        return
    call.prompt_tokens += sum(count_tokens(m["content"]) for m in messages)
    call.completion_tokens += count_tokens(content)


class OpenAICompatibleLLM:
    """`timeout_s` is a deadline for the whole call (connecting, sending, the answer's last
    byte), not for each read: an endpoint that drips bytes cannot hold a worker longer."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        response_format: ResponseFormat = "auto",
    ) -> None:
        self.model = model
        self.timeout_s = timeout_s
        self.response_format = response_format
        self._json_schema = response_format != "json_object"
        self._base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = self._new_client()
        self._calls = ThreadPoolExecutor(max_workers=4, thread_name_prefix="llm")

    def _new_client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self._base_url, headers=self._headers, timeout=httpx.Timeout(self.timeout_s)
        )

    def _post(self, body: dict[str, object], deadline: float) -> httpx.Response:
        """POST within the call's deadline (a `time.monotonic()` value). Past it the client
        is closed, which drops its connections (the abandoned request ends with them), and a
        fresh one is used next."""
        # On the pool's thread, the request stays in the caller's trace (tracing.carry).
        call = self._calls.submit(tracing.carry(self._client.post), "/chat/completions", json=body)
        try:
            return call.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            stale, self._client = self._client, self._new_client()
            stale.close()
            raise LLMTimeout(
                f"no complete answer within {self.timeout_s:g}s (CONTINUUM_LLM_TIMEOUT_S)"
            ) from None
        except httpx.TimeoutException as exc:
            raise LLMTimeout(f"LLM endpoint timed out: {exc!r}") from exc
        except httpx.HTTPError as exc:  # refused connections, resets
            raise LLMUnavailable(f"LLM endpoint unreachable: {exc!r}") from exc

    def _complete(
        self,
        prompt: Prompt[Any],
        messages: list[dict[str, str]],
        deadline: float,
        call: usage.CallRecord,
    ) -> str:
        """One chat completion's text, in json_schema mode unless the endpoint refused it;
        its requests and tokens are added to `call`."""
        while True:
            json_schema = self._json_schema
            call.requests += 1
            response = self._post(
                {
                    "model": self.model,
                    "temperature": 0,
                    "max_tokens": prompt.max_tokens,
                    "response_format": prompt.response_format(json_schema),
                    "messages": messages,
                },
                deadline,
            )
            refused = response.status_code in SCHEMA_REFUSED
            if not (refused and json_schema and self.response_format == "auto"):
                break
            log.warning("LLM endpoint refused json_schema (%s): using json_object", response)
            self._json_schema = False
        if response.status_code == 429 or response.status_code >= 500:
            raise LLMUnavailable(f"LLM endpoint answered {response.status_code}")
        if response.status_code >= 400:
            raise LLMBadOutput(f"LLM endpoint refused the request: {response.status_code}")
        try:
            data = response.json()
            content = str(data["choices"][0]["message"]["content"])
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMBadOutput(f"not a chat completion: {response.text[:200]!r}") from exc
        _count_tokens(call, data.get("usage"), messages, content)
        return content

    def ask(
        self,
        prompt: Prompt[T],
        lines: Sequence[str],
        *,
        namespace: str,
        session_id: str | None = None,
        context: str = "",
    ) -> T:
        """Send `prompt` about the conversation `lines` for tenant `namespace` and validate
        the answer. An answer that is not valid JSON of the schema gets one repair: the model
        sees its answer and the validation error and answers again; still invalid,
        `LLMBadOutput` (the caller falls back to the deterministic path). All within one
        deadline of `timeout_s`; every call is recorded (`continuum.inference.usage`).
        Raises `LLMOverBudget`, without calling, once the tenant's daily budget is spent."""
        if usage.over_budget(namespace):
            metrics.incr(metrics.LLM_BUDGET_SKIPS)
            raise LLMOverBudget(f"{namespace} spent its daily LLM token budget")
        call = usage.CallRecord(namespace, session_id, self.model, prompt.name, prompt.version)
        started = time.monotonic()
        traced = {"gen_ai.request.model": self.model, "continuum.prompt": prompt.name}
        with tracing.span("continuum.llm", "internal", traced) as span:
            try:
                return self._ask(prompt, prompt.messages(lines, context), started, call)
            except LLMError as exc:
                if isinstance(exc, LLMTimeout):
                    call.outcome = "timeout"
                call.error = str(exc)[:MAX_ECHOED_CHARS]
                raise
            finally:
                call.latency_ms = round((time.monotonic() - started) * 1000)
                usage.record(call)
                if span is not None:
                    span.set_attribute("continuum.llm.outcome", call.outcome)

    def _ask(
        self,
        prompt: Prompt[T],
        messages: list[dict[str, str]],
        started: float,
        call: usage.CallRecord,
    ) -> T:
        deadline = started + self.timeout_s
        content = self._complete(prompt, messages, deadline, call)
        try:
            answer = _parse(prompt, content)
        except LLMBadOutput as exc:
            metrics.incr(metrics.LLM_REPAIRS)
            repair = [
                {"role": "assistant", "content": content[:MAX_ECHOED_CHARS]},
                {"role": "user", "content": REPAIR.format(error=str(exc)[:MAX_ECHOED_CHARS])},
            ]
        else:
            call.outcome = "ok"
            return answer
        content = self._complete(prompt, messages + repair, deadline, call)
        call.outcome = "fallback"
        answer = _parse(prompt, content)
        call.outcome = "repaired"
        return answer

    def close(self) -> None:
        self._client.close()
        self._calls.shutdown(wait=False)


@lru_cache(maxsize=1)
def get_llm() -> OpenAICompatibleLLM | None:
    """The configured LLM, or None (no endpoint: the deterministic path is used, silently)."""
    settings = get_settings()
    if not settings.llm_base_url:
        return None
    return OpenAICompatibleLLM(
        settings.llm_base_url,
        settings.llm_model,
        settings.llm_api_key,
        settings.llm_timeout_s,
        settings.llm_response_format,
    )
