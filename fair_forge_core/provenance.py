"""What produced a result (`schemas.Provenance`), so that two results can be checked to be
comparable before they are compared (docs/how-to/compare.md "Compare two agents").

`judge_provenance` names a judge by its class path and model, and
fingerprints it with `identity`, a sha256: for a chat model (adapted to a judge by the registry),
of `judges.usage.judge_identity` (class path, model, sampling parameters, endpoint when set,
output mode, prompt hash), the fingerprint of what decides its verdicts, which never holds a key
or a header; for a `Judge` passed to `evaluate` as it is, of its class path and its `spec()`
(kind, model, offline, reads, settings: what it says decides its verdicts, a panel's
and a cascade's including their members'). `datasets_hash` fingerprints the conversations judged.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from pydantic_core import to_json

from fair_forge_core import __version__
from fair_forge_core.judges.base import Judge
from fair_forge_core.judges.usage import class_path_of, judge_identity, judge_model_name, prompt_hash
from fair_forge_core.schemas import Dataset, EvaluationConfig, JudgeProvenance, Provenance


def _sha256_of_json(value: Any) -> str:
    """sha256 (hex) of `value` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def judge_provenance(judge: BaseChatModel | Judge, config: EvaluationConfig) -> JudgeProvenance:
    """One judge (module docstring): a chat model by its class path, model name and the sha256 of
    its `judge_identity`; a `Judge` by its class path, its spec's model, and the sha256 of its
    class path and spec (its kind included)."""
    if isinstance(judge, BaseChatModel):
        return JudgeProvenance(
            class_path=class_path_of(judge),
            model=judge_model_name(judge),
            identity=_sha256_of_json(judge_identity(judge, config)),
        )
    spec = judge.spec()
    class_path = f"{type(judge).__module__}.{type(judge).__qualname__}"
    return JudgeProvenance(
        class_path=class_path,
        model=spec.model,
        identity=_sha256_of_json({"class_path": class_path, **spec.as_json()}),
    )


def datasets_hash(datasets: Sequence[Dataset]) -> str:
    """sha256 (hex) of the datasets as validated, serialised as JSON in the models' field order
    (pydantic's serialiser: the same datasets always give the same bytes; a dict inside a tool
    call keeps the order it was written in). A turn's `agent_usage` and `trace_span` are left
    out: what the agent spent, and where in a trace its answer was, decide no verdict, so a run
    that differs only in them judged the same conversations."""
    digest = hashlib.sha256()
    for dataset in datasets:
        # The end-state fields only when given, so that a dataset without them hashes as it always has.
        absent: dict[str, Any] = {name: True for name in END_STATE_FIELDS if name not in dataset.model_fields_set}
        unhashed = {name for turn in dataset.conversation for name in TURN_FIELDS_NOT_HASHED if getattr(turn, name)}
        if unhashed:
            absent["conversation"] = {"__all__": unhashed}
        digest.update(to_json(dataset, exclude=absent or None))
        digest.update(b"\n")
    return digest.hexdigest()


END_STATE_FIELDS = ("expected_state", "final_state")
TURN_FIELDS_NOT_HASHED = ("agent_usage", "trace_span")


SPREAD_CHECKS = frozenset({"answer_correctness", "tool_correctness", "goal"})
"""The checks whose specs are fields of `Provenance` of their own (`threshold`, the tool settings,
the goal's), not entries of `checks`."""


def provenance_of(
    judges: Sequence[BaseChatModel | Judge], config: EvaluationConfig, datasets: Sequence[Dataset]
) -> Provenance:
    """The provenance of an evaluation of `datasets` by `judges` (one judge, or an ensemble's in
    request order; each a chat model or a `Judge`) under `config`: the judges', then the checks' `spec()`s (the built-in checks'
    as fields of their own: `threshold`, the tool settings, and with goals `require_goal` and the
    goal prompt's hash; any other's under `checks`: a plug-in check's always, a built-in one's
    (`criteria`) when it asks the judge about these datasets, so a result without criteria records
    none), and the figure settings (k, the statistical mode, the judging settings,
    `max_unscored_share`)."""
    from fair_forge_core.checks import BUILT_IN_NAMES, active_checks

    checks = active_checks(config)
    specs = {check.name: check.spec() for check in checks}
    other = {
        check.name: specs[check.name]
        for check in checks
        if check.name not in SPREAD_CHECKS
        and (check.name not in BUILT_IN_NAMES or any(check.questions(dataset) for dataset in datasets))
    }
    goal = specs["goal"] if any(dataset.goal is not None for dataset in datasets) else {}
    return Provenance(
        version=__version__,
        judges=[judge_provenance(judge, config) for judge in judges],
        prompt_hash=prompt_hash(),
        **specs["answer_correctness"],
        **specs["tool_correctness"],
        k=config.k,
        statistical_mode=config.statistical_mode.model_dump(),
        judge_samples=config.judge_samples,
        judge_vote=config.judge_vote,
        judge_cascade=config.judge_cascade,
        datasets_hash=datasets_hash(datasets),
        max_unscored_share=config.max_unscored_share,
        **goal,
        checks=other or None,
    )
