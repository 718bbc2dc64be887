"""template.yaml as parsed, against the code it deploys: every function gets the settings its handler reads;
the API's access log; the concurrency a job leaves to POST /run; the base image pinned by digest."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters

import handler.job_attempts as attempts
import handler.job_lambdas as lambdas
from fair_forge_testing.cloudformation import template
from fair_forge_testing.handler_client import call_handler
from fair_forge_testing.jobs_harness import REGION, jobs_aws
from fair_forge_testing.jobs_support import varied_conversations
from fair_forge_testing.stub_agent import StubAgentServer, StubScript, StubTask
from handler.local import LocalLambdaContext
from handler.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = "fair_forge_core.judges.ReferenceJudge"
FUNCTION = "AWS::Lambda::Function"
# Some new AWS accounts start with a Lambda concurrency limit of 10 (1,000 is the usual default).
NEW_ACCOUNT_CONCURRENCY = 10


def functions() -> dict[str, dict[str, Any]]:
    return {name: r["Properties"] for name, r in template()["Resources"].items() if r["Type"] == FUNCTION}


def handler_of(properties: dict[str, Any]) -> str:
    """The handler a function runs: its ImageConfig.Command, else the image's CMD (the Dockerfile's)."""
    command = properties.get("ImageConfig", {}).get("Command")
    if command:
        return str(command[0])
    [cmd] = re.findall(r'^CMD \["([\w.]+)"\]$', (ROOT / "Dockerfile").read_text(), re.MULTILINE)
    return cmd


class SettingsReads:
    """Which `Settings` fields each handler reads: every field access is recorded under the handler that runs."""

    def __init__(self) -> None:
        self.running: str | None = None
        self.reads: dict[str, set[str]] = {}

    @contextmanager
    def running_handler(self, name: str) -> Iterator[None]:
        self.running = name
        try:
            yield
        finally:
            self.running = None

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        fields = frozenset(Settings.model_fields)

        def traced(instance: Settings, name: str) -> Any:
            if name in fields and self.running is not None:
                self.reads.setdefault(self.running, set()).add(name)
            return object.__getattribute__(instance, name)

        monkeypatch.setattr(Settings, "__getattribute__", traced)


@pytest.mark.filterwarnings("ignore:No application metrics to publish")
def test_every_function_gets_the_settings_its_handler_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each function's handler is run for real (POST /run, POST /jobs with datasets and with an agent, GET /jobs/{id},
    GET /health; the agent job's attempts; each shard's worker; the reduce) with its reads of `Settings` recorded. Every setting the template passes to any function
    must reach every function whose handler reads it, with the same value."""
    handlers = {name: handler_of(properties) for name, properties in functions().items()}
    assert set(handlers.values()) == {
        "handler.app.lambda_handler",
        "handler.job_lambdas.worker_handler",
        "handler.job_lambdas.reduce_handler",
        "handler.job_attempts.attempts_handler",
    }
    trace = SettingsReads()
    monkeypatch.setenv("FAIR_FORGE_AGENT_HOSTS", "127.0.0.1")
    monkeypatch.setenv("FAIR_FORGE_AGENT_SECRET_PREFIX", "fair-forge/agents/")
    script = StubScript(tasks={"t": StubTask("t", ("4",))})
    with jobs_aws(monkeypatch, execute=False, shard_size=2) as aws, StubAgentServer(script) as agent:
        parameters.clear_caches()  # a provider made before moto started would call AWS itself
        boto3.client("secretsmanager", region_name=REGION).create_secret(
            Name="fair-forge/agents/a", SecretString=json.dumps({"api_key": "s", "url": agent.url})
        )
        trace.install(monkeypatch)
        body = {"connector": {"class_path": REFERENCE, "params": {}}, "datasets": varied_conversations(5)}
        agent_body = {
            "connector": {"class_path": REFERENCE, "params": {}},
            "agent": {"kind": "http", "url": agent.url, "credential": {"secret": "fair-forge/agents/a"}},
            "tasks": [{"task_id": "t", "turns": [{"query": "2 + 2?", "ground_truth_assistant": "4"}]}],
            "attempts": 2,
        }
        with trace.running_handler("handler.app.lambda_handler"):
            assert call_handler(body).status == 200
            assert call_handler(method="GET", path="/health").status == 200
            submitted = aws.submit(body)
            assert submitted.status == 202, submitted.body
            job_id = submitted.body["job_id"]
            assert aws.status(job_id).body["status"] == "running"
            agent_job = aws.submit(agent_body)
            assert agent_job.status == 202, agent_job.body
        with trace.running_handler("handler.job_attempts.attempts_handler"):
            done = attempts.attempts_handler({"job_id": agent_job.body["job_id"]}, LocalLambdaContext(timeout_s=900))
            assert done["done"] is True and done["conversations"] == 2
        parameters.clear_caches()
        with trace.running_handler("handler.job_lambdas.worker_handler"):
            for shard in range(submitted.body["shards"]):
                event = {"job_id": job_id, "shard_key": f"jobs/{job_id}/shards/{shard:05d}.json"}
                lambdas.worker_handler(event, LocalLambdaContext(timeout_s=900))
        with trace.running_handler("handler.job_lambdas.reduce_handler"):
            lambdas.reduce_handler({"job_id": job_id}, LocalLambdaContext(timeout_s=900))
        with trace.running_handler("handler.app.lambda_handler"):
            assert aws.status(job_id).status == 200  # (the execution is not run here: still "running")
    assert set(trace.reads) == set(handlers.values())  # every handler ran and read its settings

    variables = {Settings.variable(field): field for field in Settings.model_fields}
    environments = {name: p["Environment"]["Variables"] for name, p in functions().items()}
    for name, environment in environments.items():  # no variable the code does not know (a typo reads nothing)
        unknown = {v for v in environment if v not in variables and not v.startswith("POWERTOOLS_")}
        assert not unknown, f"{name} sets {sorted(unknown)}, which no setting reads"
    configured = {v for environment in environments.values() for v in environment if v in variables}
    for name, environment in environments.items():
        read = {Settings.variable(field) for field in trace.reads[handlers[name]]}
        missing = (read & configured) - set(environment)
        assert not missing, f"{name} ({handlers[name]}) reads {sorted(missing)}, which the template does not give it"
    for variable in configured:  # the same setting means the same value everywhere
        values = [json.dumps(env[variable], sort_keys=True) for env in environments.values() if variable in env]
        assert len(set(values)) == 1, f"{variable} differs between functions: {values}"


def test_the_api_writes_a_json_access_log_that_expires() -> None:
    resources = template()["Resources"]
    stage = resources["Stage"]["Properties"]
    setting = stage["AccessLogSetting"]
    assert "${ApiAccessLogGroup}" in setting["DestinationArn"]["Fn::Sub"]
    assert not setting["DestinationArn"]["Fn::Sub"].endswith(":*")  # API Gateway takes the ARN without it
    fields = json.loads(setting["Format"])  # one JSON object per request
    assert {"requestId", "status", "resourcePath", "httpMethod", "ip", "apiKeyId"} <= set(fields)
    assert all(re.fullmatch(r"\$context\.[\w.]+", value) for value in fields.values())
    assert "$context.identity.apiKey" not in fields.values()  # the key's id is logged, never the key itself
    group = resources["ApiAccessLogGroup"]["Properties"]
    assert group["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    # API Gateway logs through the account's CloudWatch role: set by the stack unless the operator says not to.
    for name in ("ApiGatewayCloudWatchRole", "ApiGatewayAccount"):
        assert resources[name]["Condition"] == "SetsAccountRole"
    assert template()["Parameters"]["SetApiGatewayAccountRole"]["Default"] == "true"
    assert resources["ApiGatewayAccount"]["Properties"]["CloudWatchRoleArn"] == {
        "Fn::GetAtt": ["ApiGatewayCloudWatchRole", "Arn"]
    }
    # The stage waits for the account's role when the stack sets it (a reference, since DependsOn cannot be
    # conditional): API Gateway refuses an access log setting before.
    assert "${ApiGatewayAccount}" in json.dumps(stage["Description"])


def test_a_job_leaves_post_run_its_share_of_a_new_accounts_concurrency() -> None:
    body = template()
    shards = int(body["Parameters"]["MaxParallelShards"]["Default"])
    # A job runs MaxParallelShards workers at once (the reduce runs after them): at most half of the
    # account's 10, so POST /run keeps the other half while a job runs.
    assert shards <= NEW_ACCOUNT_CONCURRENCY // 2
    variables = body["Resources"]["Function"]["Properties"]["Environment"]["Variables"]
    assert variables["FAIR_FORGE_JOBS_MAX_PARALLEL_SHARDS"] == {"Ref": "MaxParallelShards"}
    # No reservation by default: Lambda refuses one that leaves fewer than 100 unreserved executions, which
    # on a 10-limit account is any; an operator with room sets ApiReservedConcurrency.
    assert int(body["Parameters"]["ApiReservedConcurrency"]["Default"]) == 0
    reserved = body["Resources"]["Function"]["Properties"]["ReservedConcurrentExecutions"]
    assert reserved == {
        "Fn::If": ["HasReservedConcurrency", {"Ref": "ApiReservedConcurrency"}, {"Ref": "AWS::NoValue"}]
    }
    assert body["Conditions"]["HasReservedConcurrency"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "ApiReservedConcurrency"}, 0]}]
    }


DIGEST = re.compile(r"^ARG BASE_IMAGE=public\.ecr\.aws/lambda/python:3\.12@sha256:[0-9a-f]{64}$", re.MULTILINE)


def test_the_base_image_is_pinned_by_digest() -> None:
    assert DIGEST.search((ROOT / "Dockerfile").read_text())
    makefile = (ROOT / "Makefile").read_text()
    [recipe] = re.findall(r"^pin: venv\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe.split("\n")[:2] == ["\tscripts/pin-base-image.sh", "\t$(MAKE) lock"]


def fake_crane(directory: Path, output: str) -> None:
    """A `crane` that prints `output` for `crane digest <image>` (no registry is reachable here)."""
    directory.mkdir(exist_ok=True)
    crane = directory / "crane"
    crane.write_text(
        f'#!/bin/sh\n[ "$1" = digest ] && [ "$2" = public.ecr.aws/lambda/python:3.12 ] && echo "{output}"\n'
    )
    crane.chmod(0o755)


def test_pin_writes_the_digest_the_registry_gives(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(ROOT / "scripts", project / "scripts")
    shutil.copy2(ROOT / "Dockerfile", project / "Dockerfile")
    before = (project / "Dockerfile").read_text()
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}

    def pin() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(project / "scripts" / "pin-base-image.sh")], capture_output=True, text=True, timeout=120, env=env
        )

    new = "sha256:" + "ab" * 32
    fake_crane(tmp_path / "bin", new)
    done = pin()
    assert done.returncode == 0, done.stderr
    after = (project / "Dockerfile").read_text()
    assert f"ARG BASE_IMAGE=public.ecr.aws/lambda/python:3.12@{new}\n" in after
    assert after.replace(new, "") == re.sub(r"sha256:[0-9a-f]{64}", "", before)  # nothing else changed

    fake_crane(tmp_path / "bin", "unauthorized: authentication required")
    done = pin()
    assert done.returncode != 0
    assert "could not resolve public.ecr.aws/lambda/python:3.12 to a digest" in done.stderr
    assert (project / "Dockerfile").read_text() == after  # left as it was


def test_the_operators_options_are_off_by_default_and_reach_every_function() -> None:
    """VPC placement, the customer key, tracing, the dead-letter queue and IAM authorization: parameters whose
    defaults change nothing (and cost nothing), wired through Conditions into every resource they concern."""
    body = template()
    defaults = {name: body["Parameters"][name]["Default"] for name in OPTIONS}
    assert defaults == OPTIONS
    resources = body["Resources"]
    for name, properties in functions().items():
        assert properties["VpcConfig"]["Fn::If"][0] == "InVpc", name
        assert properties["VpcConfig"]["Fn::If"][2] == {"Ref": "AWS::NoValue"}, name
        assert properties["KmsKeyArn"] == {"Fn::If": ["HasKmsKey", {"Ref": "KmsKeyArn"}, {"Ref": "AWS::NoValue"}]}
        assert properties["TracingConfig"] == {"Mode": {"Ref": "Tracing"}}, name
    for name in ("WorkerFunction", "ReduceFunction", "AttemptsFunction"):
        target = resources[name]["Properties"]["DeadLetterConfig"]["TargetArn"]["Fn::If"]
        assert target[:2] == ["HasDeadLetterQueue", {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}]
    for name in ("DeadLetterQueue", "DeadLetterQueuePolicy"):
        assert resources[name]["Condition"] == "HasDeadLetterQueue"
    assert resources["CustomerKeyPolicy"]["Condition"] == "HasKmsKey"
    for name, resource in resources.items():
        if resource["Type"] == "AWS::Logs::LogGroup":
            assert resource["Properties"]["KmsKeyId"]["Fn::If"][0] == "HasKmsKey", name
    assert resources["JobsBudgetTable"]["Properties"]["SSESpecification"]["KMSMasterKeyId"]["Fn::If"][0] == "HasKmsKey"
    assert resources["Stage"]["Properties"]["TracingEnabled"] == {"Fn::If": ["TracingActive", True, False]}
    assert resources["StateMachine"]["Properties"]["TracingConfiguration"] == {
        "Enabled": {"Fn::If": ["TracingActive", True, False]}
    }
    methods = {n: r["Properties"] for n, r in resources.items() if r["Type"] == "AWS::ApiGateway::Method"}
    for name, method in methods.items():
        expected = "NONE" if method["HttpMethod"] == "OPTIONS" else {"Ref": "AuthorizationType"}
        assert method["AuthorizationType"] == expected, name
    # The functions join a VPC only with both lists: subnets alone would leave them without a security group.
    assert body["Conditions"]["InVpc"] == {
        "Fn::And": [
            {"Fn::Not": [{"Fn::Equals": [{"Ref": "SubnetIds"}, ""]}]},
            {"Fn::Not": [{"Fn::Equals": [{"Ref": "SecurityGroupIds"}, ""]}]},
        ]
    }


OPTIONS = {
    "SubnetIds": "",
    "SecurityGroupIds": "",
    "KmsKeyArn": "",
    "Tracing": "PassThrough",
    "WorkerDeadLetterQueue": "false",
    "AuthorizationType": "NONE",
}
