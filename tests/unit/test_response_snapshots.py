"""benchmarks/response_snapshots.py: what its comparison ignores (the two added fields, the volatile
values) and what it reports (everything else, key order and `1` against `1.0` included)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.response_snapshots import compare, differences, normalise, strip_added

RESULT: dict[str, Any] = {
    "success": True,
    "per_conversation_metrics": [{"session_id": "s1", "k": 2, "pass_at_k": 1.0}],
    "aggregated_metrics": {"k": 2, "pass_at_k": 1.0},
    "request_id": "3ffd6f5d-42b3-4d35-adf4-9aec6ec18d60",
}


def with_added(result: dict[str, Any]) -> dict[str, Any]:
    """`result` as the refactor returns it: `format_version` first, `checks` in each conversation."""
    added = {"format_version": 2, **copy.deepcopy(result)}
    for conversation in added["per_conversation_metrics"]:
        conversation["checks"] = [{"name": "answer", "passed": True}]
    return added


def found(base: Any, new: Any) -> list[str]:
    return list(differences(normalise(base), strip_added(normalise(new), normalise(base))))


def test_the_added_fields_are_ignored_at_the_top_and_in_a_jobs_result() -> None:
    assert found(RESULT, with_added(RESULT)) == []
    job = {"status": "succeeded", "result": RESULT}
    assert found(job, {"status": "succeeded", "result": with_added(RESULT)}) == []


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda r: r["aggregated_metrics"].update(checks=[]), "$.aggregated_metrics: keys"),  # not a conversation
        (lambda r: r["per_conversation_metrics"][0].update(checks="all"), "$.per_conversation_metrics[0]: keys"),
        (lambda r: r["aggregated_metrics"].update(format_version=2), "$.aggregated_metrics: keys"),
        (lambda r: r["per_conversation_metrics"][0].update(k=2.0), "$.per_conversation_metrics[0].k: 2 != 2.0"),
        (lambda r: r.update(success=r.pop("success")), "$: keys"),  # the same keys in another order
        (lambda r: r["per_conversation_metrics"].append({}), "$.per_conversation_metrics: length 1 != 2"),
    ],
)
def test_anything_else_is_a_difference(change: Any, where: str) -> None:
    new = with_added(RESULT)
    change(new)
    assert [line for line in found(RESULT, new) if line.startswith(where)], found(RESULT, new)


def test_volatile_values_are_placeholders() -> None:
    text = "request 3ffd6f5d-42b3-4d35-adf4-9aec6ec18d60 at http://127.0.0.1:43121/v1, job /jobs/" + "ab" * 16
    assert normalise({"request_id": "x", "note": text}) == {
        "request_id": "<request_id>",
        "note": "request <volatile> at http://127.0.0.1:<volatile>/v1, job /jobs/<volatile>",
    }


def write(directory: Path, *responses: dict[str, Any]) -> Path:
    directory.mkdir()
    record = {"test": "t", "method": "POST", "path": "/run", "query": None, "accept": None, "request": "{}"}
    lines = [json.dumps({**record, "status": 200, "base64": False, "response": json.dumps(r)}) for r in responses]
    (directory / "responses-1.jsonl").write_text("".join(line + "\n" for line in lines))
    return directory


def test_compare_counts_and_exits_1_on_a_difference_or_an_unmatched_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write(tmp_path / "base", RESULT, RESULT)
    assert compare(base, write(tmp_path / "same", with_added(RESULT), with_added(RESULT)), show=5) == 0
    assert capsys.readouterr().out.startswith("compared 2, identical 2, differing 0, unmatched 0 in")
    changed = with_added(RESULT) | {"success": False}
    assert compare(base, write(tmp_path / "changed", with_added(RESULT), changed), show=5) == 1
    out = capsys.readouterr().out
    assert out.startswith("compared 2, identical 1, differing 1,") and "$.success: true != false" in out
    assert compare(base, write(tmp_path / "fewer", with_added(RESULT)), show=5) == 1
    assert ", unmatched 1 in " in capsys.readouterr().out
