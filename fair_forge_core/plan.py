"""One run planner for every face: what `POST /run`, `POST /jobs`, `POST /calibrate` and
`fair-forge` each did apart — build the judges of a validated request, check an ensemble,
set up the ledger (prices, the cost cap, the judge cache and its scope), run the evaluation
and order its warnings — done once here. A face reads its input its own way (HTTP with its
limits, files), hands this module a `RunRequest`, and only maps a `PlanError` to its answer
(a 400, exit 2) and an evaluation failure (`JudgeProviderRefused`, `NoConversationScored`) to
its (a 502, exit 3).

- `build_judges(connector, config, source)`: each connector (`connector`, or `connector[i]` of an
  ensemble) built under the allowlist and key rules (`connectors.build_chat_model`), then
  `judges.panel.check_panel` for an ensemble.
- `plan_ledger(connectors, config, models, …)`: the `JudgeLedger` and the warnings the result gets
  about it: the cache is used only when the request may share it (`judges.cache.cache_use`,
  scoped to the caller, or in a scope decided before: a job's shards), a cap needs a price and
  an output bound, and its spending may be kept in a shared budget (a job's shards).
- `plan_run(request, source, …)`: the three steps above as one `RunPlan`, what a face runs.
- `execute(plan, …)`: `evaluate` with the plan's judges and ledger; the warnings of importing
  traces come first in the result's, the ledger's last.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from fair_forge_core.schemas import ConnectorSpec, EvaluationConfig, EvaluationResult, RunRequest

if TYPE_CHECKING:
    from fair_forge_core.connectors import EndpointPolicy, Judge
    from fair_forge_core.judges.base import RunContext
    from fair_forge_core.judges.budget import Budget
    from fair_forge_core.judges.cache import JudgeCache
    from fair_forge_core.judges.prices import PriceTable
    from fair_forge_core.judges.usage import JudgeLedger

PlanErrorKind = Literal["connector_not_allowed", "connector", "panel", "judge_error", "cap"]


class PlanError(Exception):
    """A request no run can be planned for. `kind` says which rule refused it, `field` names the
    request field (`connector[1]`, `config.judge_cascade`; None for the cap's errors, whose
    message names the cap), `where` is the connector's place for connector errors, and `cause`
    the exception of the rule, whose message a face shows as it always has."""

    def __init__(self, kind: PlanErrorKind, cause: Exception, *, field: str | None = None, where: str = "") -> None:
        super().__init__(str(cause))
        self.kind, self.cause, self.field, self.where = kind, cause, field, where


@dataclass(frozen=True)
class JudgeSource:
    """How a face's environment builds judges: the operator's extra connectors, the endpoint
    policy, where the server's key comes from, and what to say when a key is needed and there
    is none (None: the provider SDK may find one itself, as on a user's machine)."""

    extra_connectors: Sequence[str]
    policy: EndpointPolicy
    server_key: Callable[[], str | None] | None = None
    no_key_message: str | None = None


@dataclass
class RunPlan:
    """A validated request, ready to run: its judges (with the secrets to mask), its ledger, and
    the warnings the result carries first (importing traces) and last (the ledger's)."""

    request: RunRequest
    judges: list[Judge]
    ledger: JudgeLedger
    import_warnings: list[str] = field(default_factory=list)
    ledger_warnings: list[str] = field(default_factory=list)

    @property
    def models(self) -> list[Any]:
        return [judge.model for judge in self.judges]

    @property
    def secrets(self) -> frozenset[str]:
        return frozenset().union(*(judge.secrets for judge in self.judges))


def connector_place(connector: ConnectorSpec | list[ConnectorSpec], index: int) -> str:
    """How messages name connector `index` of a request's `connector`: `connector`, or
    `connector[i]` when it is a list (an ensemble)."""
    return f"connector[{index}]" if isinstance(connector, list) else "connector"


def build_judges(
    connector: ConnectorSpec | list[ConnectorSpec], config: EvaluationConfig, source: JudgeSource
) -> list[Judge]:
    """The judges of a request's `connector` (one, or an ensemble's in order), then the ensemble's
    check under `config`. `PlanError` for a class path not allowed, a connector the rules
    refuse, an ensemble `check_panel` refuses, or a `config.judge_error` of another judge
    (`judge_error.check_judge_error`)."""
    from fair_forge_core import connectors
    from fair_forge_core.judges.panel import PanelError, check_panel

    judges = []
    for index, spec in enumerate(connector if isinstance(connector, list) else [connector]):
        where = connector_place(connector, index)
        try:
            judges.append(
                connectors.build_chat_model(
                    spec.class_path,
                    spec.params,
                    extra_connectors=source.extra_connectors,
                    server_key=source.server_key,
                    no_key_message=source.no_key_message,
                    policy=source.policy,
                )
            )
        except connectors.ConnectorNotAllowed as exc:
            raise PlanError("connector_not_allowed", exc, field=f"{where}.class_path", where=where) from None
        except connectors.ConnectorError as exc:
            raise PlanError("connector", exc, field=exc.field, where=where) from None
    try:
        check_panel([judge.model for judge in judges], config)
    except PanelError as exc:
        raise PlanError("panel", exc, field=exc.field) from None
    if config.judge_error is not None:
        from fair_forge_core.judge_error_input import JudgeErrorRefused, check_judge_error
        from fair_forge_core.provenance import judge_provenance

        try:
            check_judge_error(config, [judge_provenance(judge.model, config).identity for judge in judges])
        except JudgeErrorRefused as exc:
            raise PlanError("judge_error", exc, field=exc.field) from None
    return judges


def batch_prices(
    connectors: Sequence[ConnectorSpec], models: list[Any], prices: PriceTable | None
) -> PriceTable | None:
    """`prices` at the batch price of each judge model's provider (`judges.prices.at_batch_price`)."""
    from fair_forge_core.judges.batch import batch_price_factors
    from fair_forge_core.judges.prices import at_batch_price

    return at_batch_price(prices, batch_price_factors([spec.class_path for spec in connectors], models))


def plan_ledger(
    connectors: Sequence[ConnectorSpec],
    config: EvaluationConfig,
    models: list[Any],
    *,
    prices: PriceTable | None,
    cache: JudgeCache | None,
    api_key_id: str | None = None,
    max_cost_usd: float | None = None,
    cap_label: str | None = None,
    cache_refused: Callable[[str], str] = lambda warning: warning,
    cache_scope: str | None = None,
    budget: Budget | None = None,
) -> tuple[JudgeLedger, list[str]]:
    """The ledger of a request judged by `models` (built from its `connectors`) under `config`, and
    the warnings the result gets about it.

    `cache` is the store the face opened for this request (None: none); it is used only when
    the connectors may share it (`judges.cache.cache_use`), else left out with the warning
    (passed through `cache_refused`, for a face that words it its own way), and scoped to the
    caller (`api_key_id`; without one, the caller's own key). `max_cost_usd` (labelled
    `cap_label`) overrides `config.max_cost_usd`. `cache_scope` is a scope decided before, for
    a run planned in parts (a job's shards: `POST /jobs` decided it for the caller): the cache is
    then used under it as it is, the connectors not asked again. `budget` is where the cap's
    spending is kept when it is shared beyond this ledger (a job's shards spend one cap;
    `judges.budget`). Under `config.judge_batch` every price is the batch price
    (`batch_prices`: each provider's, `judges.batch.BATCH_PRICE_FACTORS`). `PlanError` ("cap") for a cap without a price, or without an
    output bound while output costs money."""
    from fair_forge_core.judges.cache import cache_use
    from fair_forge_core.judges.usage import CapNotEnforceable, JudgeLedger

    warnings: list[str] = []
    if cache_scope is not None:
        scope: str | None = cache_scope
    else:
        scope, refused = cache_use(connectors, api_key_id=api_key_id)
        if cache is not None and refused is not None:
            cache = None
            warnings.append(cache_refused(refused))
    try:
        ledger = JudgeLedger.for_models(
            models,
            config,
            prices=batch_prices(connectors, models, prices) if config.judge_batch else prices,
            cache=cache,
            max_cost_usd=max_cost_usd,
            cap_label=cap_label,
            cache_scope=scope,
            budget=budget,
        )
    except CapNotEnforceable as exc:
        raise PlanError("cap", exc) from None
    return ledger, warnings


def plan_run(
    request: RunRequest,
    source: JudgeSource,
    *,
    import_warnings: Sequence[str] = (),
    prices: PriceTable | None = None,
    cache: JudgeCache | None = None,
    api_key_id: str | None = None,
    max_cost_usd: float | None = None,
    cap_label: str | None = None,
    cache_refused: Callable[[str], str] = lambda warning: warning,
    check_judges: Callable[[list[Judge]], None] | None = None,
) -> RunPlan:
    """The plan of a validated request: its judges (`build_judges`), then `check_judges` (a face's
    own rule on them, e.g. what the server's key may buy), then its ledger (`plan_ledger`), with
    the warnings of importing its traces (`import_warnings`) to come first in the result.
    `PlanError` as those functions raise it."""
    judges = build_judges(request.connector, request.config, source)
    if check_judges is not None:
        check_judges(judges)
    ledger, ledger_warnings = plan_ledger(
        request.connectors,
        request.config,
        [judge.model for judge in judges],
        prices=prices,
        cache=cache,
        api_key_id=api_key_id,
        max_cost_usd=max_cost_usd,
        cap_label=cap_label,
        cache_refused=cache_refused,
    )
    return RunPlan(request, judges, ledger, list(import_warnings), ledger_warnings)


async def execute(plan: RunPlan, context: RunContext | None = None) -> EvaluationResult:
    """Run the plan: `evaluate` with its judges and ledger, and `context`'s deadline, retry
    policy, telemetry and progress callback (`judges.base.RunContext`; its ledger is the plan's,
    and the plan's secrets are masked in what the judges return);
    the warnings of importing traces come first in the result's, the ledger's last; a request's
    adaptive `attempts` add `aggregated_metrics.adaptive` (`adaptive_result.with_adaptive`).
    `JudgeProviderRefused` and `NoConversationScored` propagate, for the face to map. A plan under
    `config.judge_batch` runs only as the collect pass of batch judging (`context.batch`; else a
    ValueError): its prices are the batch's."""
    import dataclasses

    from fair_forge_core.evaluate import evaluate
    from fair_forge_core.judges.base import RunContext

    context = context or RunContext()
    if plan.request.config.judge_batch and context.batch is None:
        # Its prices are the batch's (`plan_ledger`): judged online, its cost and cap would be half.
        raise ValueError("config.judge_batch: a plan of batch judging runs through `batch_run`, not online")
    context = dataclasses.replace(context, ledger=plan.ledger, secrets=context.secrets | plan.secrets)
    from fair_forge_core.adaptive_result import with_adaptive

    result = await evaluate(plan.request.datasets, plan.models, plan.request.config, context=context)
    # A recording's adaptive attempts (`RunRequest.attempts`) reach every face through the result.
    result = with_adaptive(result, plan.request.attempts)
    result.warnings[:0] = plan.import_warnings
    result.warnings.extend(plan.ledger_warnings)
    return result
