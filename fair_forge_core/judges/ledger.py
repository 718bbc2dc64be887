"""The judge's cost ledger: tokens and money per evaluation, the cost cap, and the judge cache's key.

One `JudgeLedger` per evaluation. `AnswerJudge` feeds it:

- Tokens. Every judge call that returns a reply is counted in `calls`. Its usage is the
  `usage_metadata` LangChain puts on the reply's `AIMessage` (read by a callback, so
  structured output, whose runnable returns a parsed object, is counted too):
  `input_tokens`, `output_tokens`, and `input_token_details.cache_read` as cached input
  tokens (a part of the input tokens, as OpenAI and LangChain count them). A reply
  without `usage_metadata` adds to `calls_without_usage` and to no token count. Calls
  that fail (an HTTP error, a timeout) are not counted: providers do not bill them.
  Replies that do not parse are counted: they were billed.
- Money. With a `ModelPrice` (USD per million tokens) for the judge's model, one call
  costs `(input - cached) × input + cached × cached_input + output × output`, divided by
  10^6 (`cost_usd`); `cached_input` defaults to the input price. Without a price the
  cost is None. Calls without usage cost nothing here, so the cost is then a lower bound.
- Prices come from the operator (`FAIR_FORGE_JUDGE_PRICES`, read by
  `connectors.environment.JudgeEnvironment` with `read_price_table`); the offline
  `ReferenceJudge` ("fair-forge-reference") has a built-in price of zero, which a table
  entry of that name overrides. It reports no token usage (it is not a language model),
  so its calls all count in `calls_without_usage`, at a known cost of 0.
- The cap. With `max_cost_usd`, every judge call first reserves its worst-case cost from one
  `CostBudget` shared by every connector, sample and concurrent call of the evaluation:
  input tokens bounded by the bytes of the messages sent (`input_token_bound`: a byte-level
  BPE token is at least one byte) at the input price, plus the judge's output bound
  (`output_token_bound`: its `max_tokens` or like) at the output price. A call whose
  reservation does not fit beside what was spent and what calls in flight reserved does not
  start; its judgement is unscored with `cap_message()`. When the reply arrives the
  reservation is replaced by the call's cost from its usage (a reply without usage keeps its
  whole reservation against the cap); a call that fails releases it (providers do not bill
  failed calls). So the spending never passes the cap, unless a provider counts more input
  tokens than the message bytes bound. A cap needs a price (`MissingPrice`) and, when output
  tokens cost money, an output bound (`UnboundedOutput`): both are `CapNotEnforceable`.
- Pinning. `model_name` and `prompt_hash` (sha256 of `RUBRIC_VERSION` and of the judge
  prompt's template, see `prompt_hash`) are in every result's `judge_usage`.
- Ensembles (`connector` as a list, `judges.panel`): `JudgeLedger.for_models` gives each
  connector a ledger of its own (its price, its cache identity), under one ledger that adds
  them up in `judge_usage` (each member's in `judge_usage.members`) and holds the cap, which
  applies to what the members spent together and needs a price for each.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage

from fair_forge_core.judges.budget import (
    Budget,
    CostBudget,
    MissingPrice,
    UnboundedOutput,
    input_token_bound,
    output_token_bound,
)
from fair_forge_core.judges.cache import decode_entry, encode_entry
from fair_forge_core.judges.identity import judge_identity, judge_model_name, messages_for_key
from fair_forge_core.judges.prices import PRICES_VARIABLE, ModelPrice, PriceTable, price_of
from fair_forge_core.judges.tokens import TokenUsage, UsageCapture, cost_usd
from fair_forge_core.judges.verdict import Verdict
from fair_forge_core.schemas import EvaluationConfig
from fair_forge_core.schemas.result import JudgeUsage

if TYPE_CHECKING:
    from fair_forge_core.judges.cache import JudgeCache

COST_CAP_PHRASE = "the cost cap ("
"""How the message of a judgement the cost cap stopped begins (`JudgeLedger.cap_message`)."""

# The name the ledger logged under when it lived in `judges.usage`: operators' log filters and
# the tests' captures name it, so the cache's warnings keep it.
logger = logging.getLogger("fair_forge_core.judges.usage")


@dataclass
class JudgeLedger:
    """The judge's usage and cost over one evaluation (see the module docstring).

    `cache` is the verdict store when the cache is on for this evaluation (`judges.cache`),
    `cache_identity` what the key holds besides the messages (`cache_key`).
    """

    model_name: str
    prompt_hash: str
    price: ModelPrice | None = None
    price_source: str | None = None
    max_cost_usd: float | None = None
    cap_label: str = "config.max_cost_usd"
    cache: JudgeCache | None = None
    cache_identity: dict[str, Any] = field(default_factory=dict)
    cache_scope: str | None = None
    """Whose cache entries this evaluation reads and writes (`judges.cache.cache_scope`), hashed
    into every key; None only for a ledger built without one (the library's default)."""
    calls: int = 0
    calls_without_usage: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    budget: Budget | None = None
    """The cap's budget (`max_cost_usd`), one for an ensemble and all its members; None without a cap."""
    output_tokens_bound: int | None = None
    """The judge's bound on a reply's tokens (`output_token_bound`), for the cap's reservations."""
    structured: bool = False
    """Whether calls send the verdict's schema (`config.use_structured_output`): more input to reserve."""
    cache_hits: int = 0
    cache_misses: int = 0
    cache_errors: int = 0
    turns_stopped_by_cap: int = 0
    cascade_settled_offline: int | None = None
    """Set by `evaluate` under `config.judge_cascade` (`judges.cascade`); None otherwise."""
    cascade_sent_to_llm: int | None = None
    members: list[JudgeLedger] | None = None
    """An ensemble's ledgers, one per connector (`for_models`); this one then only adds them up."""

    @classmethod
    def for_models(
        cls,
        models: Sequence[BaseChatModel],
        config: EvaluationConfig,
        *,
        prices: PriceTable | None = None,
        cache: JudgeCache | None = None,
        max_cost_usd: float | None = None,
        cap_label: str | None = None,
        cache_scope: str | None = None,
        budget: Budget | None = None,
    ) -> JudgeLedger:
        """The ledger of an evaluation judged by `models` (one, or an ensemble's in request
        order): `for_model`'s for one model; for several, a ledger over one `for_model` ledger
        per member (`members`), whose cap applies to what they spent together. `MissingPrice`
        when a cap is set and any member's model has no price."""
        options: dict[str, Any] = {
            "prices": prices,
            "cache": cache,
            "max_cost_usd": max_cost_usd,
            "cap_label": cap_label,
            "cache_scope": cache_scope,
            "budget": budget,
        }
        if len(models) == 1:
            return cls.for_model(models[0], config, **options)
        members = [cls.for_model(model, config, **options) for model in models]
        lead = members[0]
        ensemble = cls(
            model_name=" + ".join(member.model_name for member in members),
            prompt_hash=lead.prompt_hash,
            max_cost_usd=lead.max_cost_usd,
            cap_label=lead.cap_label,
            cache=cache,
            members=members,
            budget=lead.budget,
        )
        for member in members:  # one budget: the cap holds for what they spend together
            member.budget = lead.budget
        return ensemble

    @classmethod
    def for_model(
        cls,
        model: BaseChatModel,
        config: EvaluationConfig,
        *,
        prices: PriceTable | None = None,
        cache: JudgeCache | None = None,
        max_cost_usd: float | None = None,
        cap_label: str | None = None,
        cache_scope: str | None = None,
        budget: Budget | None = None,
    ) -> JudgeLedger:
        """The ledger of an evaluation of `config` judged by `model`.

        The cap is `max_cost_usd` (labelled `cap_label`, e.g. "--max-cost-usd"), else
        `config.max_cost_usd` (labelled "config.max_cost_usd"). A cap without a price for
        the model raises `MissingPrice` naming the label. The price is `prices.price_of` the
        model name: the table's entry, else the offline judge's built-in zero, else None. The cap's
        reservations go to `budget` when given (one shared by processes), else to a
        `CostBudget` of this evaluation; `cache_scope` is hashed into every cache key.
        """
        name = judge_model_name(model)
        price, source = price_of(name, prices)
        label = "config.max_cost_usd"
        cap = config.max_cost_usd
        if max_cost_usd is not None:
            cap, label = max_cost_usd, cap_label or "max_cost_usd"
        if cap is not None and price is None:
            raise MissingPrice(
                f"{label} needs the price of the judge model {name!r}: add it to {PRICES_VARIABLE} "
                '(e.g. {"' + name + '": {"input": 0.15, "output": 0.6}}, USD per million tokens)'
            )
        bound = output_token_bound(model)
        if cap is not None and price is not None and price.output > 0 and bound is None:
            raise UnboundedOutput(
                f"{label} needs a bound on the judge's reply: set connector.params.max_tokens "
                "(a verdict needs about 200 tokens; 1024 is ample), so that no call can cost more than it reserved"
            )
        identity = judge_identity(model, config)
        return cls(
            model_name=name,
            prompt_hash=identity["prompt_hash"],
            price=price,
            price_source=source,
            max_cost_usd=cap,
            cap_label=label,
            cache=cache,
            cache_identity=identity,
            cache_scope=cache_scope,
            budget=(budget or CostBudget(cap)) if cap is not None else None,
            output_tokens_bound=bound,
            structured=config.use_structured_output,
        )

    def record(self, usage: TokenUsage | None) -> None:
        """Count one call that returned a reply, with its usage (None: not reported)."""
        self.calls += 1
        if usage is None:
            self.calls_without_usage += 1
            return
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cached_input_tokens += usage.cached_input_tokens

    @property
    def cost(self) -> float | None:
        """The cost so far, in USD; None without a price. Summed from the token totals in
        one step, so that it is exactly the module docstring's rule applied to `judge_usage`.
        An ensemble's: its members' summed, None unless each has a price."""
        if self.members:
            costs = [member.cost for member in self.members]
            return None if None in costs else sum(cost for cost in costs if cost is not None)
        if self.price is None:
            return None
        totals = TokenUsage(self.input_tokens, self.output_tokens, self.cached_input_tokens)
        return cost_usd(totals, self.price)

    def worst_case_cost(self, messages: Sequence[BaseMessage]) -> float:
        """The most a call sending `messages` can cost: `input_token_bound` at the higher of the
        input prices, `output_tokens_bound` at the output price (0 without a price or a bound,
        which `for_model` allows only when there is no cap or output is free)."""
        if self.price is None:
            return 0.0
        input_price = max(self.price.input, self.price.cached_input or 0.0)
        input_cost = input_token_bound(messages, structured=self.structured) * input_price
        return (input_cost + (self.output_tokens_bound or 0) * self.price.output) / 1e6

    async def reserve(self, messages: Sequence[BaseMessage]) -> float | None:
        """Reserve the worst-case cost of a call sending `messages` from the cap's budget: the
        amount reserved (0 without a cap), or None when it does not fit (the call must not
        start; `turns_stopped_by_cap` counts it)."""
        if self.budget is None:
            return 0.0
        amount = self.worst_case_cost(messages)
        if not await self.budget.reserve(amount):
            self.turns_stopped_by_cap += 1
            return None
        return amount

    async def settle(self, reserved: float, capture: UsageCapture) -> None:
        """Replace a call's reservation by what it cost: its usage at the price when the reply
        reported one, the whole reservation when the reply reported none, nothing when there
        was no reply (a failed call is not billed)."""
        if self.budget is None:
            return
        spent = 0.0
        if capture.replied:
            spent = reserved if capture.usage is None or self.price is None else cost_usd(capture.usage, self.price)
        await self.budget.settle(reserved, spent)

    def cap_message(self) -> str:
        """Why a turn the cap stopped is unscored."""
        return f"{COST_CAP_PHRASE}{self.cap_label} {self.max_cost_usd:g}) was reached"

    def cache_key(self, messages: Sequence[BaseMessage], sample: int = 0) -> str:
        """sha256 (hex) of the canonical JSON (sorted keys, no spaces) of `cache_identity`
        (`judge_identity`: key format, connector class path, model name, sampling parameters,
        endpoint, deployment and API version when set, output mode, prompt hash) and the exact
        messages sent (role and content of each); for the repeated judgements of
        `config.judge_samples`, the sample's number when it is not 0 (so sample 0 shares the
        entry of a single judgement); and the caller's `cache_scope` when there is one."""
        payload: dict[str, Any] = {**self.cache_identity, "messages": messages_for_key(messages)}
        if sample:
            payload["sample"] = sample
        if self.cache_scope is not None:
            payload["scope"] = self.cache_scope
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    async def lookup(self, key: str) -> Verdict | None:
        """The cached verdict under `key` (a hit), or None (a miss: no entry, an entry that
        is not a verdict, or a store that failed; the last two are logged)."""
        if self.cache is None:
            return None
        try:
            data = await asyncio.to_thread(self.cache.get, key)
        except Exception as exc:
            self.cache_errors += 1
            logger.warning("judge cache read failed; judging", extra={"key": key[:12], "error": _safe(exc)})
            data = None
        verdict = None if data is None else decode_entry(data)
        if data is not None and verdict is None:
            logger.warning("judge cache entry is not a verdict; judging again", extra={"key": key[:12]})
        if verdict is None:
            self.cache_misses += 1
            return None
        self.cache_hits += 1
        return verdict

    async def store(self, key: str, verdict: Verdict) -> None:
        """Store a scored verdict under `key`; a store that fails is logged, never an error."""
        if self.cache is None:
            return
        try:
            await asyncio.to_thread(self.cache.put, key, encode_entry(verdict))
        except Exception as exc:
            self.cache_errors += 1
            logger.warning("judge cache write failed", extra={"key": key[:12], "error": _safe(exc)})

    @property
    def total_cache_errors(self) -> int:
        """The cache's failed reads and writes (`lookup`, `store`: each a logged miss or a lost
        entry, never an error) over the evaluation; an ensemble's adds its members', on whose
        ledgers their calls count. The service logs it (`judge_cache_errors`); it is not in
        `judge_usage`, whose fields stay as they are."""
        return self.cache_errors + sum(member.cache_errors for member in self.members or [])

    def summary(self) -> JudgeUsage:
        """The `aggregated_metrics.judge_usage` of this evaluation (an ensemble's: its members'
        totals, and each member's own in `members`)."""
        if self.members:
            return self._ensemble_summary()
        cost = self.cost
        return JudgeUsage(
            model=self.model_name,
            prompt_hash=self.prompt_hash,
            calls=self.calls,
            calls_without_usage=self.calls_without_usage,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_input_tokens=self.cached_input_tokens,
            cost_usd=None if cost is None or not math.isfinite(cost) else cost,
            price_source=self.price_source,
            max_cost_usd=self.max_cost_usd,
            turns_stopped_by_cap=self.turns_stopped_by_cap,
            cache_enabled=self.cache is not None,
            cache_hits=self.cache_hits,
            cache_misses=self.cache_misses,
            cascade_settled_offline=self.cascade_settled_offline,
            cascade_sent_to_llm=self.cascade_sent_to_llm,
        )

    def _ensemble_summary(self) -> JudgeUsage:
        parts = [member.summary() for member in self.members or []]
        total = total_usage(parts)
        return total.model_copy(
            update={
                "model": self.model_name,
                "max_cost_usd": self.max_cost_usd,
                "cache_enabled": self.cache is not None,
                "cascade_settled_offline": self.cascade_settled_offline,
                "cascade_sent_to_llm": self.cascade_sent_to_llm,
                "members": parts,
            }
        )


def total_usage(parts: Sequence[JudgeUsage]) -> JudgeUsage:
    """The usage of several parts of one evaluation added up (an ensemble's members, the shards
    of a job): every count summed; `cost_usd` the sum when every part has one, else null;
    `model` and `prompt_hash` the first part's (each part names its own); `price_source` the
    parts' distinct sources joined by "; "; `max_cost_usd` the first part's; the cascade's
    counts summed over the parts that have them (null when none has); `cache_enabled` when
    any part had the cache; `members`, when every part has the same number of them (the shards
    of one ensemble's job), each member's totals over the parts. `ValueError` for no parts."""
    if not parts:
        raise ValueError("no judge usage to add up")
    costs = [part.cost_usd for part in parts]
    sources = [part.price_source for part in parts if part.price_source]
    return JudgeUsage(
        model=parts[0].model,
        prompt_hash=parts[0].prompt_hash,
        calls=_summed(parts, "calls"),
        calls_without_usage=_summed(parts, "calls_without_usage"),
        input_tokens=_summed(parts, "input_tokens"),
        output_tokens=_summed(parts, "output_tokens"),
        cached_input_tokens=_summed(parts, "cached_input_tokens"),
        cost_usd=None if None in costs else sum(cost for cost in costs if cost is not None),
        price_source="; ".join(dict.fromkeys(sources)) or None,
        max_cost_usd=parts[0].max_cost_usd,
        turns_stopped_by_cap=_summed(parts, "turns_stopped_by_cap"),
        cache_enabled=any(part.cache_enabled for part in parts),
        cache_hits=_summed(parts, "cache_hits"),
        cache_misses=_summed(parts, "cache_misses"),
        cascade_settled_offline=_summed_if_any(part.cascade_settled_offline for part in parts),
        cascade_sent_to_llm=_summed_if_any(part.cascade_sent_to_llm for part in parts),
        members=_members_added_up(parts),
    )


def _summed(parts: Sequence[JudgeUsage], count: str) -> int:
    """The count named `count` (an int field of `JudgeUsage`) summed over `parts`."""
    return sum(int(getattr(part, count)) for part in parts)


def _summed_if_any(counts: Iterable[int | None]) -> int | None:
    """The sum of the counts that are not None; None when every one is."""
    present = [count for count in counts if count is not None]
    return sum(present) if present else None


def _members_added_up(parts: Sequence[JudgeUsage]) -> list[JudgeUsage] | None:
    members = [part.members for part in parts]
    if not all(members) or len({len(m or []) for m in members}) != 1:
        return None
    return [total_usage([(m or [])[i] for m in members]) for i in range(len(members[0] or []))]


def _safe(exc: BaseException) -> str:
    """A store's exception for a log line: its type and the start of its message."""
    return f"{type(exc).__name__}: {str(exc)[:200]}"
