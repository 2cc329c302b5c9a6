"""The store's sealed column types read back through the decoders sealing registers, and
refuse a sealed value when none is registered rather than show its ciphertext."""

from __future__ import annotations

import pytest

from continuum.sealing import envelope
from continuum.store.models import SealedDetails, SealedReaders, SealedText


def test_sealing_registers_its_decoders_on_import() -> None:
    assert SealedReaders.text is envelope.read_text
    assert SealedReaders.details is envelope.read_details


def test_a_sealed_value_without_a_decoder_is_refused_and_plaintext_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(SealedReaders, "text", None)
    monkeypatch.setattr(SealedReaders, "details", None)
    column = SealedText("messages.content")
    assert column.process_result_value("plain words", None) == "plain words"
    details = SealedDetails("memories.details")
    assert details.process_result_value({"channel": "voice"}, None) == {"channel": "voice"}
    for sealed in ("enc1:AAAA", "enc2:AAAA@31"):  # both formats
        with pytest.raises(RuntimeError, match=r"import continuum\.sealing\.envelope"):
            column.process_result_value(sealed, None)
        with pytest.raises(RuntimeError):
            details.process_result_value({"sealed": sealed}, None)
