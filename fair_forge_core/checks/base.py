"""What a check is (`Check`), how checks are found (`register_check`, `active_checks`), and the one
rule that turns their results into a verdict (`turn_verdict`, `conversation_verdict`).
Docs: docs/checks.md.

A **check** decides one part of a conversation's verdict. `for_config(config)` gives the check of
an evaluation under `config` (reading only its own settings), or None when it is off. Per
conversation, `questions(dataset)` are what it asks the evaluation's judge (none for a
deterministic check: it is then run before any judge call, so the deadline bounds only the judge's
work), and `check(dataset, judged)` gives its `CheckResult`s from the judgements of those
questions, in the order it asked them; a conversation it does not apply to gets none. `spec()`
is what provenance records of it.

**The verdict.** A turn is scored when none of its required results is unscored, and correct when
every one of them passed. A conversation is scored when none of its required results (of its
turns or its own) is unscored, and fully correct when every one of them passed. An advisory
result (`required` false) is reported and decides nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar

from fair_forge_core.judges.goal import JudgeQuestion
from fair_forge_core.judges.judgement import TurnJudgement
from fair_forge_core.schemas import CheckCause, CheckOutcome, CheckResult, Dataset, EvaluationConfig
from fair_forge_core.schemas.base import with_shared_fields_set


class Check(Protocol):
    """One part of a verdict (module docstring)."""

    name: ClassVar[str]

    @classmethod
    def for_config(cls, config: EvaluationConfig) -> Check | None: ...

    def questions(self, dataset: Dataset) -> Sequence[JudgeQuestion]: ...

    def check(self, dataset: Dataset, judged: Sequence[TurnJudgement]) -> list[CheckResult]: ...

    def spec(self) -> dict[str, Any]: ...


C = TypeVar("C", bound=type[Check])

_REGISTRY: dict[str, type[Check]] = {}


def register_check(check: C) -> C:
    """Register a check class (a class decorator): every evaluation asks it `for_config`. Results
    come in registration order (the built-in checks first); registering a name again replaces
    the earlier check in its place."""
    _REGISTRY[check.name] = check
    return check


def registered_checks() -> list[type[Check]]:
    return list(_REGISTRY.values())


def active_checks(config: EvaluationConfig) -> list[Check]:
    """The checks of an evaluation under `config`: each registered check's `for_config`, those
    that are not None, in registration order."""
    return [check for kind in _REGISTRY.values() if (check := kind.for_config(config)) is not None]


NOT_JUDGED = TurnJudgement(score=None, error="not judged", cause="judge_error")
"""The judgement of a question no judgement was given for (`run_checks`: its error names the check)."""


def run_checks(
    checks: Iterable[Check], dataset: Dataset, judged: Mapping[str, Sequence[TurnJudgement]] | None = None
) -> list[CheckResult]:
    """Every result of `checks` on `dataset`, `judged[check.name]` being the judgements of that
    check's questions in order (a question without one is `NOT_JUDGED`), ordered as every output
    reads them (`ordered`)."""
    results: list[CheckResult] = []
    for check in checks:
        asked = check.questions(dataset)
        given = list((judged or {}).get(check.name, ()))[: len(asked)]
        missing = TurnJudgement(score=None, error=f"the {check.name} was not judged", cause="judge_error")
        given += [missing] * (len(asked) - len(given))
        results += check.check(dataset, given)
    return ordered(results)


_POSITION: dict[str, int] = {}
"""Each registered check's place in the registration order (`ordered`)."""


def ordered(results: Iterable[CheckResult]) -> list[CheckResult]:
    """Turn results first, by turn, then the conversation's; each turn's, and the conversation's,
    in registration order (a name not registered last)."""
    if len(_POSITION) != len(_REGISTRY):  # a check registered since (one registered again keeps its place)
        _POSITION.clear()
        _POSITION.update((name, index) for index, name in enumerate(_REGISTRY))
    position, last = _POSITION, len(_POSITION)
    return sorted(results, key=lambda r: (r.turn is None, -1 if r.turn is None else r.turn, position.get(r.name, last)))


def turn_verdict(results: Iterable[CheckResult]) -> bool | None:
    """A turn's verdict from its results: None when a required one is unscored, else whether
    every required one passed (module docstring)."""
    verdict = True
    for r in results:  # one pass: a verdict is made per turn and per conversation
        if r.required:
            if r.outcome == "unscored":
                return None
            verdict = verdict and r.outcome == "passed"
    return verdict


def conversation_verdict(results: Iterable[CheckResult]) -> tuple[bool, bool | None]:
    """(is_scored, is_fully_correct) of a conversation from all its results (module docstring);
    `is_fully_correct` is None when it is not scored."""
    verdict = turn_verdict(results)
    return verdict is not None, verdict


def result(
    check: Check | type[Check],
    *,
    outcome: CheckOutcome,
    reason: str,
    required: bool,
    turn: int | None = None,
    score: float | None = None,
    cause: CheckCause | None = None,
    detail: dict[str, Any] | None = None,
    view: Any = None,
) -> CheckResult:
    """A `CheckResult` of `check` (its scope from `turn`), built without validation: the values
    are the checks' own, and an evaluation makes several per turn.

    Results are frozen, so equal ones are one object: a result without `detail` is looked up by
    its values and its view's identity (attempts of one task repeat their turns' judgements and
    tool scores, which are one object per distinct question: `evaluate`), among the last
    `_MADE_SIZE` made. An entry holds its view, so no other object can take that identity while
    the entry lives."""
    key = None
    if detail is None:
        key = (check.name, outcome, reason, required, turn, score, cause, id(view))
        found = _MADE.get(key)
        if found is not None:
            return found
    made = CheckResult.model_construct(
        name=check.name,
        scope="conversation" if turn is None else "turn",
        turn=turn,
        outcome=outcome,
        required=required,
        score=score,
        reason=reason,
        cause=cause,
        detail=detail,
    )
    made._view = view
    made = with_shared_fields_set(made)
    if key is not None:
        if len(_MADE) >= _MADE_SIZE:
            _MADE.clear()
        _MADE[key] = made
    return made


_MADE_SIZE = 65_536
_MADE: dict[tuple[Any, ...], CheckResult] = {}
"""The results `result` made last, by their values and their view's identity (cleared when full:
a bound on what an evaluation's results keep alive, not a cache to tune)."""


def one_line(text: str | None) -> str:
    """A reasoning on one line (newlines folded), or a note that there is none."""
    return " ".join(text.split()) if text else "no reasoning given"


def judged_outcome(passed: bool | None) -> CheckOutcome:
    return "unscored" if passed is None else "passed" if passed else "failed"
