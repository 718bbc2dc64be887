"""The judge's error as a run's input (issue #36; docs/statistics.md "Correcting for the judge's
error"): whether `config.judge_error` can correct a run (`check_judge_error`: one judge, the one
calibrated, at its threshold, identifiable), what the correction reads of a run's conversations
(`judged_tasks`), `aggregated_metrics.judge_corrected` (`judge_corrected`) and
`aggregated_metrics.judge_noise` (`judge_noise`, from the judge's samples: `sampled_tasks`), and a
`JudgeErrorInput` from the report `fair-forge calibrate` writes (`judge_error_of_json`). Pure."""

from __future__ import annotations

from collections.abc import Sequence

from fair_forge_core.judge_error import JudgedAttempt, check_identifiable, correct_suite
from fair_forge_core.judge_noise import SampledAttempt, noise_decomposition
from fair_forge_core.metrics import assistant_key
from fair_forge_core.schemas import (
    ConversationMetrics,
    EvaluationConfig,
    JudgeCorrected,
    JudgeErrorInput,
    NoiseDecomposition,
    TaskStability,
)

ANSWER_CHECK = "answer_correctness"
"""The check whose verdicts calibration measures (the judge's verdict on an answer, at the threshold)."""


def judged_attempt(conversation: ConversationMetrics) -> JudgedAttempt:
    """What the correction reads of a scored conversation: its required `answer_correctness`
    results are the judged turns (passed: judged correct), and every other required check is read
    as exact (tools, policies, end states; a goal or a criterion too: calibration measured the
    answers' verdicts only)."""
    judged = correct = 0
    others_passed = True
    for result in conversation.checks or ():
        if not result.required:
            continue
        if result.name == ANSWER_CHECK and result.turn is not None:
            judged += 1
            correct += result.passed
        else:
            others_passed = others_passed and result.passed
    return JudgedAttempt(others_passed, correct, judged)


def judged_tasks(conversations: Sequence[ConversationMetrics]) -> dict[str, list[JudgedAttempt]]:
    """The scored conversations' attempts by task, as `per_task` counts tasks
    (`metrics.task_outcomes`: one assistant's task_id; a conversation without one is a task of its
    own), named "<assistant>/<task_id>" (the task_id alone when one assistant ran)."""
    return {name: [judged_attempt(c) for c in attempts] for name, attempts in _scored_tasks(conversations).items()}


def _scored_tasks(conversations: Sequence[ConversationMetrics]) -> dict[str, list[ConversationMetrics]]:
    scored = [c for c in conversations if c.is_scored]
    assistants = {c.assistant_id for c in scored}
    tasks: dict[str, list[ConversationMetrics]] = {}
    for index, conversation in enumerate(scored):
        assistant, task = assistant_key(index, conversation)
        tasks.setdefault(task_name(assistant, str(task), len(assistants)), []).append(conversation)
    return tasks


def task_name(assistant: str, task: str, assistants: int) -> str:
    """A task's name in the judge-error reports: the task_id alone when one assistant ran, else
    "<assistant>/<task_id>"."""
    return task if assistants == 1 else f"{assistant}/{task}"


def sampled_attempt(conversation: ConversationMetrics, samples: int) -> SampledAttempt | None:
    """What the noise decomposition reads of a scored conversation: its checks as `judged_attempt`
    reads them, and each judged turn's `samples` verdicts (its one connector's scores against the
    conversation's threshold). None when a judged turn does not have exactly one connector's
    `samples` scores (a failed judgement, an ensemble, a turn the cascade settled offline)."""
    turns = []
    interactions = conversation.interactions or []
    for result in conversation.checks or ():
        if not (result.required and result.name == ANSWER_CHECK and result.turn is not None):
            continue
        votes = interactions[result.turn].judge_votes if result.turn < len(interactions) else None
        if votes is None or len(votes) != 1 or len(votes[0].scores) != samples:
            return None
        scores = votes[0].scores
        if any(score is None for score in scores):
            return None
        turns.append(tuple(score >= conversation.threshold for score in scores if score is not None))
    return SampledAttempt(judged_attempt(conversation).deterministic_passed, tuple(turns))


def sampled_tasks(conversations: Sequence[ConversationMetrics], samples: int) -> dict[str, list[SampledAttempt]]:
    """The tasks of `judged_tasks`, each attempt as `sampled_attempt` reads it; an attempt it
    cannot read is left out of its task."""
    tasks = {}
    for name, attempts in _scored_tasks(conversations).items():
        read = [a for a in (sampled_attempt(c, samples) for c in attempts) if a is not None]
        tasks[name] = read
    return tasks


class JudgeErrorRefused(ValueError):
    """`config.judge_error` that cannot correct the run (`judge_error_refusal`); `field` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def check_judge_error(config: EvaluationConfig, identities: Sequence[str]) -> None:
    """`JudgeErrorRefused` when `judge_error_refusal` refuses."""
    refusal = judge_error_refusal(config, identities)
    if refusal is not None:
        raise JudgeErrorRefused(*refusal)


def judge_error_refusal(config: EvaluationConfig, identities: Sequence[str]) -> tuple[str, str] | None:
    """(field, message) when `config.judge_error` cannot correct this run, else None: the run must
    have one judge (`identities`, its provenance identity), the one calibrated (`judge_error.judge`),
    not a cascade (whose offline judge decides turns calibration never saw), at the threshold the
    labels were judged at (when the input states it), and the counts must identify the model
    (`check_identifiable`)."""
    error = config.judge_error
    if error is None:
        return None
    if len(identities) != 1:
        return "config.judge_error", f"it corrects one judge's verdicts; this run has an ensemble of {len(identities)}"
    if config.judge_cascade:
        return "config.judge_error", (
            "it cannot correct a run under config.judge_cascade: the offline judge settles turns the calibration did not measure"
        )
    if error.judge != identities[0]:
        return "config.judge_error.judge", (
            f"the judge calibrated is {_short(error.judge)}, but this run's judge is {_short(identities[0])}"
            " (provenance.judges[0].identity): calibrate this judge, with its model, sampling and output mode"
        )
    if error.threshold is not None and error.threshold != config.threshold:
        return "config.judge_error.threshold", (
            f"the labels were judged at threshold {error.threshold}, but this run's config.threshold is {config.threshold}"
        )
    try:
        check_identifiable(error.tpr, error.tnr)
    except ValueError as exc:
        return "config.judge_error", str(exc)
    return None


def _short(identity: str) -> str:
    return identity if len(identity) <= 16 else f"{identity[:16]}…"


def judge_corrected(conversations: Sequence[ConversationMetrics], config: EvaluationConfig) -> JudgeCorrected | None:
    """`aggregated_metrics.judge_corrected`: `correct_suite` of the run's tasks (`judged_tasks`)
    at `config.k` and the statistical mode's `ci_level`, with the default draws and seed; None
    without `config.judge_error`, or when no conversation has a task_id (no per-task figures to
    correct) or none was scored."""
    if config.judge_error is None or not any(c.task_id is not None for c in conversations):
        return None
    tasks = judged_tasks(conversations)
    if not tasks:
        return None
    return correct_suite(tasks, config.k, config.judge_error, config.statistical_mode.ci_level)


def judge_noise(conversations: Sequence[ConversationMetrics], config: EvaluationConfig) -> NoiseDecomposition | None:
    """`aggregated_metrics.judge_noise`: `noise_decomposition` of the run's tasks (`sampled_tasks`)
    at `config.judge_samples`; None below 2 samples, under `config.judge_cascade`, or when no
    conversation has a task_id."""
    if config.judge_samples < 2 or config.judge_cascade or not any(c.task_id is not None for c in conversations):
        return None
    return noise_decomposition(sampled_tasks(conversations, config.judge_samples), config.judge_samples)


JUDGE_MOSTLY = 0.5
"""A flaky task's flakiness is the judge's when more than this share of its variance is (`judge_flakiness`)."""


def judge_flakiness(stability: TaskStability, noise: NoiseDecomposition) -> TaskStability:
    """`stability` with a `reason` on each flaky task whose judge share (`noise.per_task`, named as
    `judged_tasks` names tasks) is above `JUDGE_MOSTLY`: the judge's samples of one transcript
    disagree more than its attempts differ."""
    shares = {task.task: task.judge_share for task in noise.per_task}
    assistants = {task.assistant_id for task in stability.tasks}
    tasks = []
    for task in stability.tasks:
        share = shares.get(task_name(task.assistant_id, task.task_id, len(assistants)))
        if task.label == "flaky" and share is not None and share > JUDGE_MOSTLY:
            reason = (
                f"mostly the judge's: {share:.0%} of the variance in its judged success is between the judge's"
                " samples of one transcript (aggregated_metrics.judge_noise)"
            )
            task = task.model_copy(update={"reason": reason})
        tasks.append(task)
    return stability.model_copy(update={"tasks": tasks})


def judge_error_of_json(data: object, source: str | None = None) -> JudgeErrorInput:
    """A `JudgeErrorInput` from JSON: one as it is, or the report `fair-forge calibrate` writes
    (`CalibrationReport`: its judge's identity, TPR and TNR counts, threshold; level "turn", one
    label per answer), with `source` when the input does not name one. ValueError (a pydantic
    ValidationError for a malformed `JudgeErrorInput`) when it is neither, or the report has no
    judge identity or no TPR / TNR (no answer a human passed, or none they failed)."""
    if isinstance(data, dict) and "confusion" in data and "judge" not in data:
        raise ValueError(
            "the calibration report names no judge: write it again with this version's `fair-forge calibrate`"
        )
    if isinstance(data, dict) and "confusion" in data:
        judge, tpr, tnr = data.get("judge"), data.get("tpr"), data.get("tnr")
        if not isinstance(judge, dict) or not isinstance(tpr, dict) or not isinstance(tnr, dict):
            raise ValueError(
                "the calibration report has no TPR or no TNR: label answers that pass and answers that fail"
            )
        data = {
            "judge": judge.get("identity"),
            "level": "turn",
            "tpr": {"successes": tpr.get("successes"), "n": tpr.get("n")},
            "tnr": {"successes": tnr.get("successes"), "n": tnr.get("n")},
            "threshold": data.get("threshold"),
            "source": source,
        }
    error = JudgeErrorInput.model_validate(data)
    if error.source is None and source is not None:
        error = error.model_copy(update={"source": source})
    return error
