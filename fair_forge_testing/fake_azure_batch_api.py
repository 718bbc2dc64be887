"""A fake of Azure OpenAI's Batch API (files and batches) and of its chat completions, for tests.

`FakeAzureBatchServer` is a `FakeBatchServer` (the same batches, statuses, files, knobs and
inspection) on Azure's routes, as `AsyncAzureOpenAI(azure_endpoint=server.azure_endpoint)` (the
client of `AzureChatOpenAI`) calls them; `specs/azure_openai_batch.json` says where each rule
comes from:

* `POST /openai/files`, `GET /openai/files/{id}`, `GET /openai/files/{id}/content`,
  `DELETE /openai/files/{id}`, `POST /openai/batches`, `GET /openai/batches`,
  `GET /openai/batches/{id}`, `POST /openai/batches/{id}/cancel`;
* `POST /openai/deployments/{deployment}/chat/completions`, the online call, answered as
  `FakeLLMServer` answers `/v1/chat/completions` (recorded in `requests`, `call_count`), for a
  deployment of `deployments` (else a 404 `DeploymentNotFound`).

Every request needs the `api-version` query parameter (else a 404 "Resource not found") and the
`api-key` header (any key, or `api_key` when set; else a 401). OpenAI's routes (`/v1/...`) are
not served (404). An input line's `url` must be `/chat/completions` (`AZURE_ENDPOINTS`) and its
body's `model` a deployment of `deployments`, the same on every line; the fake refuses the upload
(400 naming the line and the field; for the model with Azure's `code`, `model_not_found` or
`model_mismatch`) where Azure fails the batch at validation. A batch that ends with no error line still has an
`error_file_id`, an empty file, as Azure's troubleshooting section says.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from fair_forge_testing.fake_batch_api import FakeBatchServer
from fair_forge_testing.fake_batch_input import ApiError
from fair_forge_testing.fake_llm_server import HOST, RecordedRequest

__all__ = ["AZURE_ENDPOINTS", "FakeAzureBatchServer"]

AZURE_ENDPOINTS = ("/chat/completions",)
_ONLINE = re.compile(r"/openai/deployments/(?P<deployment>[^/]+)/chat/completions")
_ACCESS_DENIED = (
    "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key "
    "for an active subscription and use a correct regional API endpoint for your resource."
)
_NO_DEPLOYMENT = "The API deployment for this resource does not exist."


class FakeAzureBatchServer(FakeBatchServer):
    """`FakeBatchServer` on Azure OpenAI's routes (the module docstring). `deployments` are the
    deployment names the resource has (default: "judge"); other keyword arguments go to
    `FakeBatchServer` and `FakeLLMServer`."""

    api_prefix = "/openai"
    endpoints = AZURE_ENDPOINTS
    empty_error_file = True

    def __init__(self, *args: Any, deployments: Iterable[str] = ("judge",), **kwargs: Any) -> None:
        self.deployments = frozenset(deployments)
        super().__init__(*args, **kwargs)

    def __enter__(self) -> FakeAzureBatchServer:
        return self

    @property
    def azure_endpoint(self) -> str:
        """The `azure_endpoint` for `AzureChatOpenAI`: "http://127.0.0.1:PORT" (its SDK adds /openai/...)."""
        return f"http://{HOST}:{self.port}"

    def _authorize(self, target: str, headers: dict[str, str]) -> None:
        """An `ApiError` unless `target` has an `api-version` (404) and `headers` an `api-key`,
        `api_key`'s when set (401)."""
        if not parse_qs(urlsplit(target).query).get("api-version", [""])[0]:
            raise ApiError(404, "Resource not found", code="404")
        key = headers.get("api-key") or ""
        if not key or (self.api_key is not None and key != self.api_key):
            raise ApiError(401, _ACCESS_DENIED, code="401")

    def _parse_input(self, filename: str, content: bytes) -> list[dict[str, Any]]:
        """The requests of an upload (`FakeBatchServer._parse_input`, with Azure's `url`), each
        body's `model` a known deployment, the first line's on every line."""
        lines = super()._parse_input(filename, content)
        for number, line in enumerate(lines, start=1):
            model = line["body"]["model"]
            if model not in self.deployments:
                message = f"Line {number}: the model deployment {model!r} of `body.model` was not found."
                raise ApiError(400, message, param="body", code="model_not_found")
            if model != lines[0]["body"]["model"]:
                message = f"Line {number}: the model deployment {model!r} differs from line 1's (one a batch)."
                raise ApiError(400, message, param="body", code="model_mismatch")
        return lines

    def _respond(self, handler: Any, record: RecordedRequest) -> int:
        """Answer an online chat completion of a known deployment as `FakeLLMServer` answers
        `/v1/chat/completions` (`record` keeps the path as sent); any other POST is refused."""
        match = _ONLINE.fullmatch(record.path.partition("?")[0])
        if match is None:
            return self._send_error_only(handler, 404, f"Unknown path {record.path}.")
        try:
            self._authorize(record.path, record.headers)
        except ApiError as error:
            return self._send_error_only(handler, error.status, error.message)
        if unquote(match["deployment"]) not in self.deployments:
            return self._send_error_only(handler, 404, _NO_DEPLOYMENT)
        return super()._respond(handler, dataclasses.replace(record, path="/v1/chat/completions"))
