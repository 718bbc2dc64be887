"""The judge's chat-completion messages sent by the openai SDK without its request transform.

`AsyncCompletions.create` (the openai SDK) passes its parameters through
`async_maybe_transform` before sending them: a walk of every value against the
parameters' TypedDicts, which renames keys that have an alias, formats dates and files
(`PropertyInfo(alias=…, format=…)`), dumps pydantic objects and drops unset values. For
the chat-completion messages none of the types behind them has an alias or a format, so
for messages that are plain JSON (dicts with text keys, lists, text, numbers, booleans,
None: what langchain-openai builds from our prompt) the transform returns what it was
given; yet walking it is about a quarter of the Python function calls of a judge call (its
CPU gain is about 7 %, within the benchmark's noise: `benchmarks/RESULTS.md`, "The LLM-judge path").

`skip_message_transform(model)` gives a chat model built on the openai SDK (ChatOpenAI and
AzureChatOpenAI, built by `connectors.build`) an `async_client` (the field langchain-openai calls
as `async_client.with_raw_response.create(**payload)` for a chat completion without
`response_format`) whose `with_raw_response.create` sends such messages through the SDK's
public `extra_body` instead: the `messages` parameter is an empty list, which the transform
walks at no cost, and `extra_body={"messages": …}` replaces it when the SDK builds the
request (its values take precedence over the parameters', and the key keeps its place),
so the request on the wire is the same, byte for byte. Anything else — messages that are
not plain JSON, an `extra_body` that already sets `messages`, a streamed call — goes
through the SDK's own call unchanged, as do every other method and attribute.

What this relies on is checked by tests that fail when an upgrade changes it
(`tests/service/test_openai_body.py`): no type behind the messages parameter has an
alias or a format; the transform of the messages we send is the identity; the request on
the wire is the same with and without this client; langchain-openai calls
`async_client.with_raw_response.create` for our chat completions.
"""

from __future__ import annotations

from typing import Any

_SCALARS = (str, int, float, bool, type(None))


def is_plain_json(value: object) -> bool:
    """Whether `value` is JSON data of the exact built-in types: a dict with `str` keys, a list,
    a `str`, an `int`, a `float`, a `bool` or None, all the way down. Subclasses (an enum, a
    pydantic object), tuples, dates and files are not: the transform may change those."""
    if type(value) in _SCALARS:
        return True
    if type(value) is list:
        return all(is_plain_json(item) for item in value)
    if type(value) is dict:
        return all(type(key) is str and is_plain_json(item) for key, item in value.items())
    return False


class _RawCreate:
    """`AsyncCompletions.with_raw_response` whose `create` sends plain messages through `extra_body`."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def __getattr__(self, name: str) -> Any:
        return getattr(_wrapped(self, "_raw", name), name)

    async def create(self, **params: Any) -> Any:
        messages = params.get("messages")
        extra_body = params.get("extra_body") or {}
        if (
            type(messages) is list
            and messages
            and not params.get("stream")
            and "messages" not in extra_body
            and is_plain_json(messages)
        ):
            params = {**params, "messages": [], "extra_body": {**extra_body, "messages": messages}}
        return await self._raw.create(**params)


class UntransformedMessages:
    """The SDK's `AsyncCompletions` (ChatOpenAI's `async_client`) with the `with_raw_response.create`
    of the module docstring; every other attribute is the SDK's own."""

    def __init__(self, completions: Any) -> None:
        self._completions = completions
        self.with_raw_response = _RawCreate(completions.with_raw_response)

    def __getattr__(self, name: str) -> Any:
        return getattr(_wrapped(self, "_completions", name), name)


def _wrapped(wrapper: object, slot: str, name: str) -> Any:
    """The object `wrapper` forwards `name` to. `__getattr__` runs for a missing attribute only; an
    instance made without `__init__` (`copy.copy`, unpickling) has no `slot` yet, and looking it up
    with `getattr` would call `__getattr__` again, without end: it is read from the instance's own
    dict, and a dunder name (which copy and pickle probe) is never forwarded."""
    inner = vars(wrapper).get(slot)
    if inner is None or (name.startswith("__") and name.endswith("__")):
        raise AttributeError(name)
    return inner


def skip_message_transform(model: Any) -> None:
    """Give `model` (an OpenAI-compatible chat model, just built) the `async_client` of the module
    docstring, once; a model without an `async_client` is left as it is."""
    client = getattr(model, "async_client", None)
    if client is not None and not isinstance(client, UntransformedMessages):
        model.async_client = UntransformedMessages(client)
