"""Secrets in text: API keys, tokens, passwords and private keys are found by the detectors of
Yelp's detect-secrets and replaced by `[redacted:<type>]` (`redact`), so a turn or a memory
that quotes one is stored without it.

The detectors are detect-secrets' regex plugins (AWS, GitHub, GitLab, Slack, Stripe, OpenAI,
JWT, PEM private keys, `https://user:pass@host`, …; each plugin's `secret_type` names the
marker: `[redacted:aws-access-key]`) and its keyword patterns (`password=…`, `api_key: "…"`).
Left out, because in conversation they flag ordinary prose: public IP addresses, the
high-entropy-string plugins (commit hashes, ids), and an unquoted keyword value that is a
plain word or has fewer than 6 characters (`password: reset` stays; `password=hunter2x`
goes). What a plugin matches is widened to the whole token (the plugins match a JWT without
its signature, a PEM block by its header line: the block from `-----BEGIN` to its
`-----END …-----` goes).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from detect_secrets.plugins import keyword
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.ip_public import IPPublicDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector

MARKER = "[redacted:{}]"
KEYWORD_TYPE = "password"  # the marker of a value assigned to `password`, `api_key`, `secret`…
MIN_BARE_VALUE = 6  # an unquoted keyword value shorter than this is taken for prose
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-+/=]*")  # what a match is widened over
_PEM_END = re.compile(r"-----END[ A-Z0-9]*-----")
_PLAIN_WORD = re.compile(r"[A-Za-z]+")
_LETTER = re.compile(r"[A-Za-z]")
_KEYWORD = re.compile(keyword.DENYLIST_REGEX, re.IGNORECASE)  # gates the keyword patterns
MIN_GROUP = 8  # a captured group this long is the secret itself (else: the prefix of one)
_EXCLUDED = (IPPublicDetector,)  # an address is not a secret, and prose is full of them


@dataclass(frozen=True)
class Redaction:
    """`text` with its secrets replaced, and how many of each type were."""

    text: str
    counts: Counter[str]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class _Pattern:
    kind: str
    regex: re.Pattern[str]
    group: int = 0  # the group holding the secret (keyword patterns: gated by `_KEYWORD`)
    quoted: bool = True  # False: an unquoted keyword value, kept if it looks like prose


def _slug(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


def _plugins() -> Iterator[type[RegexBasedDetector]]:
    """Every regex plugin detect-secrets ships (imported with its package), but the excluded."""
    import importlib
    import pkgutil

    from detect_secrets import plugins

    for module in pkgutil.iter_modules(plugins.__path__):
        importlib.import_module(f"{plugins.__name__}.{module.name}")
    pending: list[type[RegexBasedDetector]] = list(RegexBasedDetector.__subclasses__())
    while pending:
        plugin = pending.pop()
        pending += plugin.__subclasses__()
        if not getattr(plugin, "__abstractmethods__", None) and plugin not in _EXCLUDED:
            yield plugin


@cache
def _patterns() -> tuple[_Pattern, ...]:
    found = [
        _Pattern(_slug(str(plugin.secret_type)), regex)
        for plugin in sorted(_plugins(), key=lambda p: p.__name__)
        for regex in plugin().denylist
    ]
    found += [
        _Pattern(KEYWORD_TYPE, regex, group)
        for regex, group in keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items()
    ]
    found += [
        _Pattern(KEYWORD_TYPE, regex, group, quoted=False)
        for regex, group in keyword.CONFIG_DENYLIST_REGEX_TO_GROUP.items()
    ]
    return tuple(found)


_JWT = _slug(JwtTokenDetector.secret_type)
_PRIVATE_KEY = _slug(PrivateKeyDetector.secret_type)


def _span(pattern: _Pattern, match: re.Match[str], text: str) -> tuple[int, int] | None:
    """Where the secret of `match` is in `text`, widened to its whole token; None when the
    match is not one (a prose value after a keyword, an invalid JWT)."""
    if pattern.group:
        start, end = match.span(pattern.group)
        value = text[start:end].split(maxsplit=1)[0] if end > start else ""
        bare = value.rstrip(".,;:!?)")
        if not pattern.quoted and not _password_like(bare):
            return None
        return (start, start + len(bare)) if bare else None
    start, end = match.span()
    groups = [match.span(g) for g in range(1, (match.lastindex or 0) + 1)]
    longest = max(groups, key=_length, default=(start, start))
    if _length(longest) >= MIN_GROUP or (groups and any(c.isspace() for c in match.group())):
        start, end = longest  # the secret, without the context the pattern needs around it
    if pattern.kind == _PRIVATE_KEY:
        block = _PEM_END.search(text, end)
        header = text.rfind("-----", 0, start)
        start = header if header >= 0 and "\n" not in text[header:start] else start
        end = block.end() if block else len(text)
        return start, end
    end = _TOKEN_TAIL.match(text, end).end()  # type: ignore[union-attr]  # always matches
    if pattern.kind == _JWT and not JwtTokenDetector.is_formally_valid(text[start:end]):
        return None
    return start, end


def _password_like(value: str) -> bool:
    """An unquoted value after a keyword that reads as a password, not as prose: long enough,
    with a letter and digits or symbols, not a plain word, a number, a date or a URL."""
    return (
        len(value) >= MIN_BARE_VALUE
        and _LETTER.search(value) is not None
        and _PLAIN_WORD.fullmatch(value) is None
        and "://" not in value
    )


def _length(span: tuple[int, int]) -> int:
    return span[1] - span[0]


def redact(text: str) -> Redaction:
    """`text` with every secret found replaced by `[redacted:<type>]`; overlapping finds
    merge into the first (the earliest, then the longest)."""
    spans: list[tuple[int, int, str]] = []
    keywords = _KEYWORD.search(text) is not None
    for pattern in _patterns():
        if pattern.group and not keywords:
            continue
        for match in pattern.regex.finditer(text):
            span = _span(pattern, match, text)
            if span is not None and span[1] > span[0]:
                spans.append((*span, pattern.kind))
    if not spans:
        return Redaction(text, Counter())
    spans.sort(key=lambda s: (s[0], -s[1]))
    out: list[str] = []
    counts: Counter[str] = Counter()
    at = 0
    for start, end, kind in spans:
        if start < at:
            continue  # inside a secret already replaced
        out += [text[at:start], MARKER.format(kind)]
        counts[kind] += 1
        at = end
    out.append(text[at:])
    return Redaction("".join(out), counts)
