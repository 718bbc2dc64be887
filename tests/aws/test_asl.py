"""statemachine/evaluation.asl.json, the jobs' state machine, checked statically.

npm's `asl-validator` (installed by .ci/run: `npm install --no-save asl-validator`, into node_modules/)
validates it against the Amazon States Language schema, JSONPaths and ARNs included; the rest of this file
checks the promises that schema cannot know: a job that runs an agent loops the attempts Lambda first, then a
Distributed Map over the S3 manifest, retries, the Map's output discarded, then the reduce. (test_jobs_e2e.py runs the same file in moto's Step Functions.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ASL_FILE = ROOT / "statemachine" / "evaluation.asl.json"
TRANSIENT_LAMBDA_ERRORS = {
    "Lambda.TooManyRequestsException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
}


def asl_validator() -> str:
    """The `asl-validator` command. Missing: a failure in CI (CI=true), where .ci/run installs it; else a skip."""
    local = ROOT / "node_modules" / ".bin" / "asl-validator"
    found = str(local) if local.exists() else shutil.which("asl-validator")
    if found:
        return found
    message = "asl-validator not found: `npm install --no-save asl-validator` (as .ci/run does)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [asl_validator(), "--json-path", str(path)], capture_output=True, text=True, timeout=250, cwd=ROOT
    )


def definition() -> dict[str, Any]:
    return dict(json.loads(ASL_FILE.read_text()))


def test_asl_validator_accepts_the_definition() -> None:
    done = validate(ASL_FILE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "is valid" in done.stdout


@pytest.mark.parametrize(
    "break_it",
    [
        lambda d: d["States"]["EvaluateShards"]["ItemProcessor"]["ProcessorConfig"].update(Mode="DISTRIBUTE"),
        lambda d: d["States"]["EvaluateShards"].update(Next="NoSuchState"),
        lambda d: d["States"]["Reduce"]["Retry"][2].update(IntervalSeconds="one"),
        lambda d: d["States"]["EvaluateShards"]["ItemProcessor"].pop("StartAt"),
        lambda d: d["States"]["Reduce"].update(Resource="not-an-arn"),
        lambda d: d["States"]["MoreAttempts"]["Choices"][0].update(Next="NoSuchState"),
        lambda d: d["States"]["RunsAgent"]["Choices"][0].pop("Next"),
    ],
)
def test_asl_validator_rejects_a_broken_copy(tmp_path: Path, break_it: Any) -> None:
    """The check has teeth: the same file with one mistake fails it."""
    broken = definition()
    break_it(broken)
    path = tmp_path / "broken.asl.json"
    path.write_text(json.dumps(broken))
    done = validate(path)
    assert done.returncode != 0, done.stdout


def test_an_agent_job_loops_its_attempts_before_the_shards() -> None:
    body = definition()
    states = body["States"]
    assert body["StartAt"] == "RunsAgent"
    route, run, more = states["RunsAgent"], states["RunAttempts"], states["MoreAttempts"]
    # Only a job whose input says agent: true runs attempts; an input without it (a job started before) does not.
    assert route["Type"] == "Choice" and route["Default"] == "EvaluateShards"
    [choice] = route["Choices"]
    assert choice["Next"] == "RunAttempts"
    assert {"Variable": "$.agent", "IsPresent": True} in choice["And"]
    assert {"Variable": "$.agent", "BooleanEquals": True} in choice["And"]
    assert run["Parameters"] == {"FunctionName": "${AttemptsFunctionArn}", "Payload": {"job_id.$": "$.job_id"}}
    # Its result goes beside the input (which the Map still reads), and the loop reads it.
    assert run["ResultPath"] == "$.attempts" and run["ResultSelector"] == {"done.$": "$.Payload.done"}
    assert run["Next"] == "MoreAttempts" and run["TimeoutSeconds"] > 900
    assert run["Retry"][0] == {**run["Retry"][0], "ErrorEquals": ["JobFailed"], "MaxAttempts": 0}
    assert more["Choices"] == [{"Variable": "$.attempts.done", "BooleanEquals": False, "Next": "RunAttempts"}]
    assert more["Default"] == "EvaluateShards"


def test_the_definition_is_a_distributed_map_then_a_reduce() -> None:
    body = definition()
    shards, reduce = body["States"]["EvaluateShards"], body["States"]["Reduce"]
    assert shards["Type"] == "Map" and shards["Next"] == "Reduce" and reduce["End"] is True
    assert shards["ItemReader"] == {
        "Resource": "arn:aws:states:::s3:getObject",
        "ReaderConfig": {"InputType": "JSON"},
        "Parameters": {"Bucket": "${JobsBucket}", "Key.$": "$.manifest_key"},
    }
    assert shards["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    assert shards["ResultPath"] is None  # the Map's own result is discarded: the results are in S3
    assert shards["MaxConcurrencyPath"] == "$.max_parallel_shards"
    assert "ToleratedFailurePercentage" not in shards and "ToleratedFailureCount" not in shards  # none tolerated
    processor = shards["ItemProcessor"]
    assert processor["StartAt"] == "EvaluateShard"
    worker = processor["States"]["EvaluateShard"]
    tasks = [
        (processor["States"][name], "${WorkerFunctionArn}") for name in ("EvaluateShard", "PollBatch", "CollectBatch")
    ]
    for task, function in [*tasks, (reduce, "${ReduceFunctionArn}")]:
        assert task["Resource"] == "arn:aws:states:::lambda:invoke"
        assert task["Parameters"]["FunctionName"] == function
        if task is not processor["States"]["PollBatch"]:  # a poll reads a batch's status: seconds
            assert task["TimeoutSeconds"] > 900  # longer than a Lambda may run: the function's own timeout decides
        retries = task["Retry"]
        assert retries[0]["ErrorEquals"] == ["JobFailed"] and retries[0]["MaxAttempts"] == 0  # never retried
        assert set(retries[1]["ErrorEquals"]) >= TRANSIENT_LAMBDA_ERRORS
        assert retries[1]["BackoffRate"] >= 2 and retries[1]["MaxAttempts"] >= 3
        assert retries[-1]["ErrorEquals"] == ["States.TaskFailed"] and retries[-1]["MaxAttempts"] >= 1
    assert worker["Parameters"]["Payload.$"] == "$"  # the manifest item {job_id, shard_key}
    # A shard judged in batch (the worker answers batch: true) waits, polls until ended, collects; any other is done.
    states = processor["States"]
    assert worker["Next"] == "Batched" and states["ShardDone"] == {"Type": "Succeed"}
    assert states["Batched"]["Choices"] == [{"Variable": "$.batch", "BooleanEquals": True, "Next": "WaitForBatch"}]
    assert states["Batched"]["Default"] == "ShardDone"
    assert states["WaitForBatch"] == {
        **states["WaitForBatch"],
        "Type": "Wait",
        "SecondsPath": "$.poll_s",
        "Next": "PollBatch",
    }
    assert (
        states["PollBatch"]["Parameters"]["Payload"]["phase"] == "poll" and states["PollBatch"]["Next"] == "BatchEnded"
    )
    assert states["BatchEnded"]["Choices"] == [{"Variable": "$.ended", "BooleanEquals": True, "Next": "CollectBatch"}]
    assert states["BatchEnded"]["Default"] == "WaitForBatch"
    assert (
        states["CollectBatch"]["Parameters"]["Payload"]["phase"] == "collect" and states["CollectBatch"]["End"] is True
    )
    assert reduce["Parameters"]["Payload"] == {"job_id.$": "$.job_id"}
