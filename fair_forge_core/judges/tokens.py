"""A judge call's tokens and their cost: `TokenUsage` read from the reply LangChain returns
(`usage_of`, by the `UsageCapture` callback, so structured output is counted too), and
`cost_usd` at a `ModelPrice`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from fair_forge_core.judges.prices import ModelPrice

if TYPE_CHECKING:
    from fair_forge_core.judges.ledger import JudgeLedger


@dataclass(frozen=True)
class TokenUsage:
    """The tokens of one judge call. `cached_input_tokens` is a part of `input_tokens`."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0


def usage_of(message: Any) -> TokenUsage | None:
    """The usage LangChain reports on a reply message (`usage_metadata`), or None."""
    metadata = getattr(message, "usage_metadata", None)
    if not metadata:
        return None
    details = metadata.get("input_token_details") or {}
    return TokenUsage(
        input_tokens=int(metadata.get("input_tokens") or 0),
        output_tokens=int(metadata.get("output_tokens") or 0),
        cached_input_tokens=int(details.get("cache_read") or 0),
    )


def cost_usd(usage: TokenUsage, price: ModelPrice) -> float:
    """What `usage` costs at `price`, in USD: `(input − cached) × input + cached × cached_input
    + output × output` over 10^6, prices per million tokens, `cached_input` defaulting to the
    input price and the cached tokens counted at most up to the input tokens."""
    cached = min(usage.cached_input_tokens, usage.input_tokens)
    cached_price = price.input if price.cached_input is None else price.cached_input
    return (
        (usage.input_tokens - cached) * price.input + cached * cached_price + usage.output_tokens * price.output
    ) / 1e6


class UsageCapture(BaseCallbackHandler):
    """A LangChain callback of one judge call: hands the reply's usage (or None) to `ledger`,
    and keeps it (`replied`, `usage`) for the call's `JudgeLedger.settle`. Without a ledger (a
    judge worker process's, `judges.processes`) it only keeps it; the evaluation's process then
    hands it on with `replied_with`."""

    run_inline = True  # on the event loop's thread, in order: no executor, no lock

    def __init__(self, ledger: JudgeLedger | None) -> None:
        self.ledger = ledger
        self.replied = False
        self.usage: TokenUsage | None = None

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> Any:
        message = None
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                break
            break
        self.replied_with(usage_of(message))

    def replied_with(self, usage: TokenUsage | None) -> None:
        """The provider replied, reporting `usage` (None: it reported none)."""
        self.replied, self.usage = True, usage
        if self.ledger is not None:
            self.ledger.record(usage)
