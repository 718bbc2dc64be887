"""The result side, mirroring docs/response.md and docs/statistics.md (see the package docstring)."""

from __future__ import annotations

from typing import Any, Final, Literal, Self

from pydantic import ConfigDict, Field

from fair_forge_core.schemas.adaptive import AdaptiveResult
from fair_forge_core.schemas.base import ResultModel
from fair_forge_core.schemas.checks import CheckResult
from fair_forge_core.schemas.comparison import Comparison
from fair_forge_core.schemas.efficiency import ConversationEfficiency, EfficiencyAggregate
from fair_forge_core.schemas.json_input import omitted_when_none
from fair_forge_core.schemas.judge_error import JudgeCorrected, NoiseDecomposition
from fair_forge_core.schemas.request import TrajectoryMatch, Unscored, UnscoredCause
from fair_forge_core.schemas.run import RunInfo


class ToolCorrectnessScore(ResultModel):
    """Deterministic tool rubric of one turn (docs/tool-rubric.md).

    `result_utilization` is null when it was not measured: tools were used, but the agent
    reported no `final_answer_uses_tools` and no call returned a result to look for in the
    answer. It is then left out of `overall_correctness` (the weights renormalised over the
    other dimensions) and of the dimension floor. `overall_correctness` and `is_correct` are
    null only when no measured dimension has a positive weight (all the weight on utilization):
    the tools then decide nothing (the turn's `tool_correct` is null)."""

    tool_selection_correct: float
    parameter_accuracy: float
    sequence_correct: float
    result_utilization: float | None
    overall_correctness: float | None
    is_correct: bool | None
    reasoning: str
    precision: float
    recall: float
    f1: float
    result_in_answer: bool | None


class JudgeVote(ResultModel):
    """What one connector of the request said of one turn (`fair_forge_core.judges.panel`):
    the score of each of its `config.judge_samples` judgements (null: that judgement failed),
    their combination by `config.judge_vote` (`score`, null when any failed), and the first
    failure's reason (`error`)."""

    model_config = ConfigDict(frozen=True)

    model: str
    scores: list[float | None]
    score: float | None
    error: str | None = None


class ToolPolicyViolation(ResultModel):
    """One broken rule of a turn's tool policy (`fair_forge_core.tools.policy`): the rule (the
    `ToolPolicy` field), the tool (null for `max_tool_calls`), a sentence naming both."""

    rule: Literal["forbidden_tools", "allowed_tools", "max_tool_calls", "max_calls_per_tool"]
    tool_name: str | None
    message: str


class ToolPolicyCheck(ResultModel):
    """A turn's calls under its tool policy (`fair_forge_core.tools.policy.check_tool_policy`):
    `passed` when no rule is broken (`violations`); `trajectory_match`, the policy's mode, and
    `trajectory_matches`, its verdict (null without a mode, or when the turn has no expected tools)."""

    passed: bool
    violations: list[ToolPolicyViolation]
    trajectory_match: TrajectoryMatch | None
    trajectory_matches: bool | None


class InteractionResult(ResultModel):
    """Per-turn detail. `answer_score` is None when the judge could not score the turn.
    `observation` is the turn's own (what the agent saw), echoed for the report. `judged_by`
    says which judge decided the answer under `config.judge_cascade` ("offline": settled by the
    offline judge; "llm": sent to the connector, scored or not); null when the cascade is off.
    `judge_votes` (one per connector, in request order) and `judge_agreement` (the share of the
    turn's judgements on the side of the threshold its score is on; null when unscored) are
    set when the turn was judged more than once (`config.judge_samples` > 1, an ensemble).
    `tool_policy` is the turn's tool policy check (`fair_forge_core.tools.policy`), present only
    on turns that have a policy (their own or their conversation's)."""

    qa_id: str
    answer_score: float | None
    answer_correct: bool | None
    tool_correct: bool | None
    is_correct: bool | None
    judge_reasoning: str | None
    error: str | None
    observation: str | None = None
    judged_by: Literal["offline", "llm"] | None = None
    judge_votes: list[JudgeVote] | None = None
    judge_agreement: float | None = None
    tool_policy: ToolPolicyCheck | None = omitted_when_none()


class RateEstimate(ResultModel):
    """pass@k and pass^k of one (n, c, k), with credible bounds in Bayesian mode.
    Frozen: `stats.estimate_rates` hands out one instance for every equal question."""

    model_config = ConfigDict(frozen=True)

    pass_at_k: float
    pass_pow_k: float
    pass_at_k_ci_low: float | None = None
    pass_at_k_ci_high: float | None = None
    pass_pow_k_ci_low: float | None = None
    pass_pow_k_ci_high: float | None = None


class StateDifference(ResultModel):
    """One key of an expected end state (`fair_forge_core.state`): its path, a JSON Pointer
    (RFC 6901: "/order/status"; "" for the whole state; "~" and "/" in a key escaped as "~0" and
    "~1"), the expected value (or rule), the final state's value (null when absent: `present`
    false), whether they agree."""

    path: str
    expected: Any
    actual: Any = None
    present: bool
    agrees: bool


class StateCheck(ResultModel):
    """The end state compared with the expected one (`fair_forge_core.state.compare_state`):
    whether it matches, how many keys were checked and disagreed, and every key's comparison."""

    matches: bool
    checked: int
    mismatched: int
    diff: list[StateDifference]


class GoalCheck(ResultModel):
    """The judge's verdict on a conversation's `goal` (`fair_forge_core.judges.goal`).

    `goal_achieved` is whether `score` (1.0 achieved, 0.0 not; with several judgements their
    combination by `config.judge_vote`: each connector's samples, then one vote per connector,
    `judges.goal`) is above 0.5 (the answers' threshold does not apply); null when the goal could not be
    judged (`error` says why: the offline judge abstains on every goal). `reasoning` ends with
    the criteria the judge found unmet. `required` is `config.require_goal`: when true the
    conversation passes only if the goal is achieved, and is unscored while it is unjudged.
    `judged_by`, `judge_votes` and `judge_agreement` mean what they mean for a turn."""

    goal: str
    goal_achieved: bool | None
    score: float | None
    reasoning: str | None
    error: str | None
    required: bool
    judged_by: Literal["offline", "llm"] | None = None
    judge_votes: list[JudgeVote] | None = None
    judge_agreement: float | None = None


class ConversationMetrics(ResultModel):
    """One conversation. n and c count scored turns; unscored ones are reported, not zeroed.

    `state_check` is the end state's comparison when the conversation has an `expected_state`
    (`fair_forge_core.state`); a conversation whose state does not match is not fully correct.
    Absent from the JSON when there is none, so results without end states read as before.
    `goal_check` likewise is the judge's verdict on the conversation's `goal` (`GoalCheck`)."""

    session_id: str
    assistant_id: str
    task_id: str | None
    total_interactions: int
    correct_interactions: int
    unscored_interactions: int
    is_scored: bool
    is_fully_correct: bool | None
    threshold: float
    correctness_scores: list[float | None]
    correct_indices: list[int]
    tool_correctness_scores: list[ToolCorrectnessScore | None]
    k: int
    pass_at_k: float | None
    pass_pow_k: float | None
    pass_at_k_ci_low: float | None = None
    pass_at_k_ci_high: float | None = None
    pass_pow_k_ci_low: float | None = None
    pass_pow_k_ci_high: float | None = None
    interactions: list[InteractionResult] | None
    state_check: StateCheck | None = omitted_when_none()
    goal_check: GoalCheck | None = omitted_when_none()
    efficiency: ConversationEfficiency | None = omitted_when_none()
    """What the conversation spent, under `config.efficiency` (`fair_forge_core.efficiency`)."""
    unscored: Unscored | None = omitted_when_none()
    """The dataset's `unscored` (cause and detail) when it was unscored before judging: nothing was
    judged or checked (every turn unscored, `is_scored` false); absent otherwise."""
    checks: list[CheckResult] = Field(default_factory=list)
    """Every part of the verdict (`CheckResult`, docs/checks.md): `is_scored` and
    `is_fully_correct` follow from it. Its turn results are per-turn detail: left out with
    `interactions`."""


class CurvePoint(ResultModel):
    """pass@k and pass^k at one k; the credible bounds are None in frequentist mode."""

    k: int
    pass_at_k: float
    pass_pow_k: float
    pass_at_k_unbiased: float | None
    pass_pow_k_unbiased: float | None
    pass_at_k_ci_low: float | None = None
    pass_at_k_ci_high: float | None = None
    pass_pow_k_ci_low: float | None = None
    pass_pow_k_ci_high: float | None = None


class PerTaskMetrics(ResultModel):
    """τ-bench style: unbiased estimators per task, averaged over tasks with ≥ k attempts.

    A task is one assistant's (`metrics.task_outcomes`): at the top level of a result with
    several assistants, each (assistant_id, task_id) is a task of its own, never pooled.

    The interval bounds (`interval_method` "task_wilson", `metrics.per_task_metrics`) are
    Wilson's score interval at `ci_level` (the request's `statistical_mode.ci_level`) with
    the tasks as the sample and the per-task mean as the proportion; None when no task has k
    attempts."""

    tasks: int
    tasks_with_k_attempts: int
    pass_at_k: float | None
    pass_pow_k: float | None
    pass_at_k_ci_low: float | None = None
    pass_at_k_ci_high: float | None = None
    pass_pow_k_ci_low: float | None = None
    pass_pow_k_ci_high: float | None = None
    ci_level: float | None = None
    interval_method: Literal["task_wilson"] | None = None


ReadinessStatus = Literal["sufficient", "insufficient_evidence", "preliminary"]


class Readiness(ResultModel):
    """The headline a person or a CI reads (`tiers.readiness`): the tier the evidence supports,
    on which figures (`basis`), and whether there is enough evidence to act on it.

    `basis` is "per_task" when conversations have task ids and some task has k scored attempts
    (the tier is then decided on `per_task` pass@k / pass^k), else "conversations" (the tier is
    `interpretation`). `scored` / `total` count conversations. `status`: "insufficient_evidence"
    when the unscored share (total − scored) / total is above `config.max_unscored_share`;
    else "preliminary" when the tier rests on fewer than 30 scored conversations (or, per task,
    fewer than 30 tasks with k attempts); else "sufficient". `tier` is None when nothing was
    scored. `summary` says all of it in one sentence."""

    tier: str | None
    basis: Literal["per_task", "conversations"]
    scored: int
    total: int
    status: ReadinessStatus
    summary: str


class JudgeUsage(ResultModel):
    """What the judge used in one evaluation (`fair_forge_core.judges.usage`), and what judged.

    `model` and `prompt_hash` pin the judge: its configured model name, and sha256 of the
    rubric version and the prompt's template. `calls` counts provider calls that returned a
    reply (a retried, unparseable reply included; failed calls and cache hits not);
    `calls_without_usage` those whose reply carried no token usage. Tokens are summed from
    LangChain's `usage_metadata`; `cached_input_tokens` (the provider's prompt cache) are a
    part of `input_tokens`. `cost_usd` is (input − cached) × input price + cached × cached
    price + output × output price, per million tokens, from the price named by
    `price_source`; null without a price, and a lower bound when calls lacked usage.
    `max_cost_usd` is the cap in force (null: none) and `turns_stopped_by_cap` the judgements
    it stopped. `cache_hits` / `cache_misses` count judgements answered from / not found in the
    judge cache (both 0 when `cache_enabled` is false). A judgement is one distinct judge
    request judged once: with `config.judge_samples` N and an ensemble of M connectors, a turn
    is up to N × M judgements.
    `cascade_settled_offline` / `cascade_sent_to_llm` count distinct judge requests the offline
    judge settled / handed to the connector under `config.judge_cascade` (null when the cascade
    is off or a no-op, the connector being the offline judge; the other counts here are the
    connector's alone).
    """

    model: str
    prompt_hash: str
    calls: int
    calls_without_usage: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cost_usd: float | None
    price_source: str | None
    max_cost_usd: float | None = None
    turns_stopped_by_cap: int = 0
    cache_enabled: bool = False
    cache_hits: int = 0
    cache_misses: int = 0
    cascade_settled_offline: int | None = None
    cascade_sent_to_llm: int | None = None
    members: list[JudgeUsage] | None = None
    """An ensemble's usage, one entry per connector in request order; the fields above are then
    their totals (`model` joins their names with " + "; `cost_usd` is null unless every member
    has a price; the cap applies to the total)."""


class JudgeConsensus(ResultModel):
    """How far a turn's several judgements agreed (`fair_forge_core.judges.panel`): present when
    turns are judged more than once (`config.judge_samples` > 1, or an ensemble).

    Counted over the turns of the result that carry `judge_votes` (a turn the cascade settled
    offline carries none). A judgement *passes* when its score is ≥ the threshold.
    `unscored_by_member[i]`: turns where a judgement of connector i failed (the turn is then
    unscored: no failed judgement is left out to reach a verdict). Over the scored turns:
    `consistency_rate` (samples > 1) is the share where each connector's samples all pass or
    all fail, `member_consistency[i]` that share for connector i alone, over the turns it
    scored; `agreement_rate` (an
    ensemble) the share where the connectors' combined scores all pass or all fail;
    `mean_agreement` the mean of the turns' `judge_agreement`. A rate is null without a turn
    to count, or when its question does not apply.
    """

    members: list[str]
    samples: int
    vote: Literal["majority", "mean"]
    turns: int
    scored_turns: int
    unscored_turns: int
    unscored_by_member: list[int]
    consistency_rate: float | None
    member_consistency: list[float | None] | None
    agreement_rate: float | None
    mean_agreement: float | None


TaskLabel = Literal["stable", "flaky", "failing"]


class LabelledTask(ResultModel):
    """One task of one assistant with at least 2 scored attempts (`fair_forge_core.flakiness`): its attempts
    (scored conversations), how many passed (fully correct), its unscored conversations (not
    attempts), the observed pass rate passed / attempts, the Clopper–Pearson interval of the
    task's pass probability from its own attempts alone, and its label: "stable" (all passed),
    "failing" (none did) or "flaky" (some but not all). `reason`: why a flaky task is flaky, when
    `aggregated_metrics.judge_noise` puts most of its variance in the judge (absent otherwise)."""

    task_id: str
    assistant_id: str
    attempts: int
    passed: int
    unscored: int
    pass_rate: float
    ci_low: float
    ci_high: float
    label: TaskLabel
    reason: str | None = omitted_when_none()


class TaskStability(ResultModel):
    """Which tasks pass every time, which never, which sometimes (`config.task_stability`;
    `fair_forge_core.flakiness.task_stability`): the labelled tasks, flaky first, then failing,
    then stable, by task_id inside; how many of each; `unlabelled`, the tasks with fewer than 2
    scored attempts (a conversation without a task_id is a task of its own); and the intervals'
    level (the request's `statistical_mode.ci_level`) and method."""

    ci_level: float
    interval_method: Literal["clopper_pearson"] = "clopper_pearson"
    stable: int
    flaky: int
    failing: int
    unlabelled: int
    tasks: list[LabelledTask]


class AggregatedMetrics(ResultModel):
    """Across conversations: n = scored conversations, c = fully correct ones."""

    total_conversations: int
    fully_correct_conversations: int
    unscored_conversations: int
    conversation_success_rate: float | None
    k: int
    statistical_mode: Literal["frequentist", "bayesian"]
    ci_level: float | None
    pass_at_k: float | None
    pass_pow_k: float | None
    pass_at_k_ci_low: float | None = None
    pass_at_k_ci_high: float | None = None
    pass_pow_k_ci_low: float | None = None
    pass_pow_k_ci_high: float | None = None
    pass_at_k_unbiased: float | None
    pass_pow_k_unbiased: float | None
    interpretation: str | None
    interpretation_explanation: str | None
    conservative_interpretation: str | None = None
    sample_size_warning: str | None
    curve: list[CurvePoint]
    per_task: PerTaskMetrics | None = None
    readiness: Readiness | None = None
    by_assistant: dict[str, AggregatedMetrics] | None = None
    comparison: Comparison | None = None
    judge_usage: JudgeUsage | None = None
    judge_consensus: JudgeConsensus | None = None
    task_stability: TaskStability | None = omitted_when_none()
    """Each task's attempts labelled stable, flaky or failing, when `config.task_stability` asks
    (`fair_forge_core.flakiness`); absent otherwise, so results read as before."""
    efficiency: EfficiencyAggregate | None = omitted_when_none()
    """Under `config.efficiency`: what the conversations spent (`fair_forge_core.efficiency`)."""
    unscored_by_cause: dict[UnscoredCause, int] | None = omitted_when_none()
    """How many conversations were unscored before judging, by the cause their `unscored` carries
    (e.g. trace attempts left unjoined by the import); absent when none was. Conversations the
    judge left unscored are counted in `unscored_conversations` only."""
    tool_utilization_unmeasured: int | None = omitted_when_none()
    """How many turns' tool utilization was not measured (their `result_utilization` null: tools
    used, no `final_answer_uses_tools` reported and no tool `result` to look for in the answer),
    left out of their tool score rather than counted as 0 (docs/tool-rubric.md); absent when none."""
    judge_corrected: JudgeCorrected | None = omitted_when_none()
    """With `config.judge_error`: the per-task pass@k / pass^k corrected for the judge's measured
    error (`fair_forge_core.judge_error.correct_suite`), beside `per_task`, never instead of it;
    absent otherwise, or when no conversation has a task_id."""
    judge_noise: NoiseDecomposition | None = omitted_when_none()
    """With `config.judge_samples` ≥ 2 and task_ids: each task's judged-success variance split into
    the judge's part (between samples of one transcript) and the agent's (between attempts)
    (`fair_forge_core.judge_error.noise_decomposition`); absent otherwise."""
    adaptive: AdaptiveResult | None = omitted_when_none()
    """When the request's attempts were adaptive (`RunRequest.attempts`): each task's confidence
    sequence and decision, the gates' bounds, and the fields adaptive stopping biases
    (`fair_forge_core.adaptive_result`); absent otherwise."""


class JudgeProvenance(ResultModel):
    """One judge of an evaluation, as its result records it (`fair_forge_core.provenance`): the connector's class
    path (a `Judge` passed to `evaluate` as it is: the judge's own class), the model name, and
    `identity`, the sha256 (hex) of everything that decides its verdicts besides the messages
    (`judges.usage.judge_identity`: class path, model, sampling parameters, endpoint when set,
    output mode, prompt hash; for a `Judge` passed as it is, its class path and `spec()`). Two
    judges with one identity give the same verdicts on the same turns; the identity never holds
    a key or a header."""

    class_path: str
    model: str
    identity: str


class Provenance(ResultModel):
    """What produced a result, so that two results can be checked to be comparable
    (`fair-forge compare --require-same-judge`): the package version, the judges (one, or an
    ensemble's in request order), the prompt hash, every setting that decides a verdict or a
    figure (thresholds, floor, weights as given, `require_tool_correctness`, k, the statistical
    mode, samples, vote, cascade and `max_unscored_share`; with goals, `require_goal` and the goal prompt's hash), and `datasets_hash`, the sha256 (hex) of the datasets'
    canonical JSON (sorted keys, no spaces): equal datasets, equal hash."""

    version: str
    judges: list[JudgeProvenance]
    prompt_hash: str
    threshold: float
    tool_threshold: float
    tool_dimension_floor: float
    tool_weights: dict[str, float]
    require_tool_correctness: bool
    k: int
    statistical_mode: dict[str, Any]
    judge_samples: int
    judge_vote: str
    judge_cascade: bool
    datasets_hash: str
    max_unscored_share: float | None = omitted_when_none()
    """`config.max_unscored_share`, which decides readiness (None in results written before it was recorded)."""
    require_goal: bool | None = omitted_when_none()
    goal_prompt_hash: str | None = omitted_when_none()
    """With goals (`judges.goal`): `config.require_goal`, and the sha256 of the goal prompt's template."""
    checks: dict[str, dict[str, Any]] | None = omitted_when_none()
    """The plug-in checks that ran (docs/checks.md), each with its `spec()`; absent when none did."""


RESULT_FORMAT: Final = "fair-forge-result/1"
"""The `format_version` of the results this version writes (docs/response.md#top-level)."""


class EvaluationResult(ResultModel):
    """The whole answer of one evaluation. `format_version` says which format it is in (always present: a reader tells
    a file is a result by it, never by its keys; one written before the field existed is of this format). `provenance`
    says what produced it, `run` (`RunInfo`) when and on which tasks: None in results written before them or without."""

    format_version: Literal["fair-forge-result/1"] = RESULT_FORMAT
    success: Literal[True] = True
    per_conversation_metrics: list[ConversationMetrics]
    aggregated_metrics: AggregatedMetrics
    warnings: list[str] = Field(default_factory=list)
    provenance: Provenance | None = None
    run: RunInfo | None = omitted_when_none()

    def without_interactions(self, reason: str) -> Self:
        """The same result without per-turn detail, and the warning `per-turn detail left out:
        <reason>` — the one way detail is dropped (by request, or to fit a response)."""
        conversations = [
            m.model_copy(update={"interactions": None, "checks": [c for c in m.checks if c.scope == "conversation"]})
            for m in self.per_conversation_metrics
        ]
        warnings = [*self.warnings, f"per-turn detail left out: {reason}"]
        return self.model_copy(update={"per_conversation_metrics": conversations, "warnings": warnings})
