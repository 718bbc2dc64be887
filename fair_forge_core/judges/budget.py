"""The judge's cost cap: a call's worst case (`input_token_bound`, `output_token_bound`), where
the cap's reservations are kept (`Budget`, in memory `CostBudget`), and the errors of a cap that
cannot be enforced. How a call reserves and settles is `ledger.JudgeLedger`'s (`reserve`,
`settle`); the rule is in `fair_forge_core.judges.ledger`'s docstring."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage


class CapNotEnforceable(ValueError):
    """A cost cap was asked for a judge whose worst-case cost cannot be known; the message
    names the cap and what to set."""


class MissingPrice(CapNotEnforceable):
    """A cost cap was asked for a model with no price; the message names the cap."""


class UnboundedOutput(CapNotEnforceable):
    """A cost cap was asked for a judge whose output tokens cost money and are not bounded
    (no `max_tokens` or like); the message names the parameter to set."""


MESSAGE_OVERHEAD_TOKENS = 8
"""Tokens a chat API adds around each message (role, separators) at most: OpenAI's format adds
3 or 4, and 3 more prime the reply; 8 a message and 8 for the reply bound them."""

OUTPUT_TOKEN_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens", "num_predict")
"""The model attributes (and `model_kwargs` keys) that bound a reply's tokens, by provider:
OpenAI, Groq and Anthropic's `max_tokens`, OpenAI's `max_completion_tokens`, Google's
`max_output_tokens`, Ollama's `num_predict`."""


def input_token_bound(messages: Sequence[BaseMessage], *, structured: bool = False) -> int:
    """An upper bound on the input tokens of a judge call: the UTF-8 bytes of every message's
    content (a byte-level BPE token, as OpenAI's, Llama 3's and most current tokenizers have,
    covers at least one byte), `MESSAGE_OVERHEAD_TOKENS` per message and for the reply, and,
    in structured mode, the bytes of the verdict's JSON schema (sent as a tool or a response
    format). About four times the true count for English text: the price of a cap that holds."""
    from fair_forge_core.judges.verdict import VERDICT_SCHEMA

    total = sum(len(str(message.content).encode()) for message in messages)
    total += MESSAGE_OVERHEAD_TOKENS * (len(messages) + 1)
    if structured:
        total += len(json.dumps(VERDICT_SCHEMA).encode())
    return total


def output_token_bound(model: BaseChatModel) -> int | None:
    """The most tokens a reply of `model` may have: the largest `OUTPUT_TOKEN_FIELDS` value set
    as an attribute or in `model_kwargs` (the largest, since which one a provider honours when
    several are set is its own affair); None when none is set."""
    found: list[int] = []
    extra = getattr(model, "model_kwargs", None)
    for name in OUTPUT_TOKEN_FIELDS:
        for value in (getattr(model, name, None), extra.get(name) if isinstance(extra, Mapping) else None):
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                found.append(value)
    return max(found) if found else None


class Budget(Protocol):
    """Where a cost cap's reservations are kept: `CostBudget` in memory for one process, or a
    store shared by processes (a job's shards: `handler.job_budget.DynamoBudget`)."""

    async def reserve(self, amount: float) -> bool: ...

    async def settle(self, reserved: float, spent: float) -> None: ...


@dataclass
class CostBudget:
    """One cost cap, shared by every connector, sample and concurrent call of an evaluation.

    `reserve(amount)` takes `amount` USD out of what is left (cap − spent − reserved) when it
    fits, else refuses; `settle(reserved, spent)` gives a reservation back and counts what the
    call cost. Both are coroutines so that a store shared between processes (a job's shards)
    can implement them; here they never wait, so on one event loop each is atomic.
    """

    cap_usd: float
    spent_usd: float = 0.0
    reserved_usd: float = 0.0

    async def reserve(self, amount: float) -> bool:
        if self.spent_usd + self.reserved_usd + amount > self.cap_usd:
            return False
        self.reserved_usd += amount
        return True

    async def settle(self, reserved: float, spent: float) -> None:
        self.reserved_usd = max(0.0, self.reserved_usd - reserved)
        self.spent_usd += spent
