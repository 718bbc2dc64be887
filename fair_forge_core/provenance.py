"""What produced a result (`schemas.Provenance`), so that two results can be checked to be
comparable before they are compared (docs/how-to/compare.md "Compare two agents").

`judge_provenance` names a judge by its class path and model and fingerprints it with the sha256
of `judges.usage.judge_identity` (class path, model, sampling parameters, endpoint when set,
output mode, prompt hash): the fingerprint of what decides its verdicts, which never holds a
key or a header. `datasets_hash` fingerprints the conversations judged.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from pydantic_core import to_json

from fair_forge_core import __version__
from fair_forge_core.judges.usage import class_path_of, judge_identity, judge_model_name, prompt_hash
from fair_forge_core.schemas import Dataset, EvaluationConfig, JudgeProvenance, Provenance


def judge_provenance(model: BaseChatModel, config: EvaluationConfig) -> JudgeProvenance:
    """One judge: class path, model name, and the sha256 (hex) of its `judge_identity` as
    canonical JSON (sorted keys, no spaces)."""
    identity = json.dumps(
        judge_identity(model, config), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str
    )
    return JudgeProvenance(
        class_path=class_path_of(model),
        model=judge_model_name(model),
        identity=hashlib.sha256(identity.encode()).hexdigest(),
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


def provenance_of(models: Sequence[BaseChatModel], config: EvaluationConfig, datasets: Sequence[Dataset]) -> Provenance:
    """The provenance of an evaluation of `datasets` by `models` (one judge, or an ensemble's in
    request order) under `config`: the judges', then the checks' `spec()`s (the built-in checks'
    as fields of their own: `threshold`, the tool settings, and with goals `require_goal` and the
    goal prompt's hash; a plug-in check's under `checks`), and the figure settings (k, the
    statistical mode, the judging settings, `max_unscored_share`)."""
    from fair_forge_core.checks import BUILT_IN_NAMES, active_checks

    specs = {check.name: check.spec() for check in active_checks(config)}
    goal = specs["goal"] if any(dataset.goal is not None for dataset in datasets) else {}
    return Provenance(
        version=__version__,
        judges=[judge_provenance(model, config) for model in models],
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
        checks={name: spec for name, spec in specs.items() if name not in BUILT_IN_NAMES} or None,
    )
