"""`fair_forge_core.plan.plan_ledger`: a cache scope decided before (a job's, by `POST /jobs`) is
used as it is, where a request planned whole has its connectors asked (`judges.cache.cache_use`)."""

from __future__ import annotations

from pathlib import Path

from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.judges.cache import DirectoryCache, cache_use
from fair_forge_core.plan import plan_ledger
from fair_forge_core.schemas import ConnectorSpec, EvaluationConfig

# A parameter outside the cache-safe ones: a request planned whole may not share the cache.
UNSAFE = [ConnectorSpec(class_path="fair_forge_core.judges.ReferenceJudge", params={"unseen_by_the_key": 1})]
SAFE = [ConnectorSpec(class_path="fair_forge_core.judges.ReferenceJudge", params={"api_key": "sk-caller-0123"})]


def test_a_request_planned_whole_has_its_connectors_asked(tmp_path: Path) -> None:
    cache = DirectoryCache(tmp_path)
    refused, warnings = plan_ledger(UNSAFE, EvaluationConfig(), [ReferenceJudge()], prices=None, cache=cache)
    assert refused.cache is None and len(warnings) == 1 and "unseen_by_the_key" in warnings[0]
    shared, none = plan_ledger(SAFE, EvaluationConfig(), [ReferenceJudge()], prices=None, cache=cache, api_key_id="k1")
    assert none == [] and shared.cache is cache
    assert shared.cache_scope == cache_use(SAFE, api_key_id="k1")[0]


def test_a_scope_decided_before_is_used_as_it_is(tmp_path: Path) -> None:
    cache = DirectoryCache(tmp_path)
    ledger, warnings = plan_ledger(
        UNSAFE, EvaluationConfig(), [ReferenceJudge()], prices=None, cache=cache, cache_scope="decided-by-post-jobs"
    )
    assert warnings == [] and ledger.cache is cache and ledger.cache_scope == "decided-by-post-jobs"
