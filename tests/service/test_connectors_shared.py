"""The service and the CLI apply one allowlist: `handler.connectors` delegates to `fair_forge_core.connectors`."""

from __future__ import annotations

import pytest

from fair_forge_core import connectors as core
from handler import connectors
from handler.settings import Settings


def test_the_service_uses_the_cores_allowlist_with_the_operators_extensions() -> None:
    assert connectors.ConnectorError is core.ConnectorError
    settings = Settings(extra_connectors=("my_pkg.chat.MyChat",))
    assert connectors.allowed_connectors(settings) == core.allowed_connectors(["my_pkg.chat.MyChat"])
    assert connectors.allowed_connectors(settings)["langchain_groq.ChatGroq"] == "langchain_groq.chat_models.ChatGroq"


def test_a_refused_class_path_points_service_callers_to_health() -> None:
    with pytest.raises(core.ConnectorNotAllowed, match="not an allowed connector; see GET /health"):
        connectors.build_judge("os.system", {}, Settings())
    with pytest.raises(core.ConnectorNotAllowed) as refused:
        core.build_chat_model("os.system", {})
    assert "GET /health" not in str(refused.value)  # the core knows nothing of HTTP


def test_the_server_key_is_asked_for_only_when_needed() -> None:
    asked: list[str] = []

    def server_key() -> str:
        asked.append("asked")
        return "gsk_server_key_0123456789"

    judge = core.build_chat_model(
        "langchain_groq.ChatGroq", {"model": "m", "api_key": "gsk_own_key_000000"}, server_key=server_key
    )
    assert asked == [] and "gsk_own_key_000000" in judge.secrets
    judge = core.build_chat_model("fair_forge_core.judges.ReferenceJudge", {}, server_key=server_key)
    assert asked == []  # the offline judge takes no key
    judge = core.build_chat_model("langchain_groq.ChatGroq", {"model": "m"}, server_key=server_key)
    assert asked == ["asked"] and "gsk_server_key_0123456789" in judge.secrets
