"""The AWS of the asynchronous jobs, inside the test process: moto, with Step Functions executing for real.

`JobsAWS` starts `mock_aws(config={"stepfunctions": {"execute_state_machine": True},
"lambda": {"use_docker": False}})` and builds what `template.yaml` deploys for jobs:
the bucket, the KMS key, the budget table, the worker, reduce and attempts functions (named, timed and given their
`ImageConfig.Command` as the template gives them), and the state machine from the very
file the template deploys, `statemachine/evaluation.asl.json`, with the template's
`DefinitionSubstitutions` filled in. moto's Step Functions interpreter runs that
definition: the Distributed Map reads the manifest from S3 (ItemReader), starts a child
execution per shard, retries as the definition says, then invokes the reduce (a job that runs an agent
first loops the attempts function, as the definition's Choice states say).

What cannot exist here is a Lambda runtime for the image: moto's Lambda backend without
docker does not run code. So its `invoke` is replaced by a dispatcher that does what the
Lambda runtime does with the image: import the function's `ImageConfig.Command`
(`handler.job_lambdas.worker_handler`, …), call it with the event and a context carrying the
function's timeout, and answer with its JSON result — or, when it raises, with the
runtime's error payload (`errorType`, `errorMessage`, `stackTrace`) and the
`X-Amz-Function-Error: Unhandled` header, which Step Functions turns into the task error
named `errorType`. A test may inject a fault into chosen invocations.
"""

from __future__ import annotations

import importlib
import json
import re
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from fair_forge_testing.cloudformation import template
from fair_forge_testing.handler_client import HandlerResponse, call_handler
from handler.local import LocalLambdaContext

ROOT = Path(__file__).resolve().parents[1]
ASL_FILE = ROOT / "statemachine" / "evaluation.asl.json"
REGION = "us-east-1"
MODULE = "agentic"
BUCKET = "fair-forge-agentic-jobs-test"
API_HEADERS = {"Host": "abc123.execute-api.us-east-1.amazonaws.com", "X-Forwarded-Proto": "https"}

# A fault: given (function name, event, attempt number of this event), raise to fail the invocation
# before the handler runs, or return "after" to run the handler and then fail the invocation.
Fault = Callable[[str, dict[str, Any], int], str | None]


@dataclass
class Invocation:
    function: str
    event: dict[str, Any]
    error: str | None = None


@dataclass
class JobsAWS:
    """Resources made by `jobs_aws()`; `invocations` records every Lambda invocation of the dispatcher."""

    bucket: str
    key_arn: str
    state_machine_arn: str
    worker_name: str
    reduce_name: str
    attempts_name: str
    invocations: list[Invocation] = field(default_factory=list)
    fault: Fault | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def s3(self) -> Any:
        return boto3.client("s3", region_name=REGION)

    def objects(self, prefix: str = "jobs/") -> dict[str, bytes]:
        """Every object under `prefix`, key → content."""
        s3 = self.s3()
        keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
                for o in page.get("Contents", [])]  # fmt: skip
        return {key: s3.get_object(Bucket=self.bucket, Key=key)["Body"].read() for key in keys}

    def calls_of(self, function: str) -> list[Invocation]:
        return [i for i in self.invocations if i.function == function]

    # ----------------------------------------------------------------- the Lambda runtime, in-process

    def _invoke(
        self, backend: Any, function_name: str, qualifier: str | None, body: Any, response_headers: Any
    ) -> bytes:
        function = backend.get_function(function_name, qualifier)
        [command] = function.image_config.cmd
        module, _, name = command.rpartition(".")
        handler = getattr(importlib.import_module(module), name)
        event = json.loads(body) if body else {}
        with self._lock:
            attempt = 1 + sum(1 for i in self.invocations if i.function == function.function_name and i.event == event)
            invocation = Invocation(function.function_name, event)
            self.invocations.append(invocation)
        context = LocalLambdaContext(
            timeout_s=float(function.timeout),
            function_name=function.function_name,
            invoked_function_arn=function.function_arn,
            memory_limit_in_mb=int(function.memory_size),
            log_group_name=f"/aws/lambda/{function.function_name}",
        )
        try:
            when = self.fault(function.function_name, event, attempt) if self.fault else None
            result = handler(event, context)
            if when == "after":
                raise RuntimeError("injected fault: the sandbox died after the handler returned")
        except Exception as exc:
            invocation.error = type(exc).__name__
            response_headers["x-amz-function-error"] = "Unhandled"
            payload = {
                "errorMessage": str(exc),
                "errorType": type(exc).__name__,
                "requestId": context.aws_request_id,
                "stackTrace": traceback.format_tb(exc.__traceback__),
            }
            return json.dumps(payload).encode()
        return json.dumps(result).encode()

    # ----------------------------------------------------------------- the API, as a client sees it

    def submit(self, body: dict[str, Any], api_key_id: str | None = None) -> HandlerResponse:
        """POST /jobs, from the caller whose API key has `api_key_id` (as API Gateway tells the function)."""
        return call_handler(body, path="/jobs", headers=API_HEADERS, api_key_id=api_key_id)

    def status(self, job_id: str) -> HandlerResponse:
        return call_handler(method="GET", path=f"/jobs/{job_id}", headers=API_HEADERS)

    def wait(self, job_id: str, timeout_s: float = 240.0) -> HandlerResponse:
        """Poll GET /jobs/{id} until the job is no longer running; every answer on the way must be a 200."""
        deadline = time.monotonic() + timeout_s
        while True:
            response = self.status(job_id)
            assert response.status == 200, response.body
            if response.body["status"] != "running":
                return response
            assert time.monotonic() < deadline, f"job {job_id} still running after {timeout_s} s: {response.body}"
            time.sleep(0.2)


def _template_value(value: Any, parameters: dict[str, Any]) -> Any:
    """A property of template.yaml with parameter references replaced by their defaults."""
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return parameters[value["Ref"]]["Default"]
    if isinstance(value, dict) and set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str):
        return re.sub(r"\$\{(\w+)\}", lambda m: str(parameters[m.group(1)]["Default"]), value["Fn::Sub"])
    return value


_DYNAMODB_ITEM_CALLS = (
    "update_item",
    "put_item",
    "delete_item",
    "get_item",
    "batch_write_item",
    "transact_write_items",
)
_DYNAMODB_LOCK = threading.RLock()


def atomic_dynamodb(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make moto's DynamoDB apply each request atomically, as DynamoDB does: moto's backend reads
    and writes an item without a lock, so two threads' `UpdateItem`s of one item can lose one
    update (8 threads × 150 increments end near 1,050, not 1,200), and a conditional reservation
    then passes a cap it should not. The backend's item calls take one lock."""
    from moto.dynamodb.models import DynamoDBBackend

    for name in _DYNAMODB_ITEM_CALLS:
        original = getattr(DynamoDBBackend, name)

        def serialised(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with _DYNAMODB_LOCK:
                return __original(self, *args, **kwargs)

        monkeypatch.setattr(DynamoDBBackend, name, serialised)


@contextmanager
def jobs_aws(monkeypatch: pytest.MonkeyPatch, *, execute: bool = True, shard_size: int = 100) -> Iterator[JobsAWS]:
    """moto with the jobs' resources of template.yaml, the handlers dispatched in-process, the environment set
    (moto's DynamoDB made atomic per request: `atomic_dynamodb`)."""
    from moto.awslambda_simple.models import LambdaSimpleBackend

    import handler.job_store

    atomic_dynamodb(monkeypatch)

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "FAIR_FORGE_SHARD_SIZE": str(shard_size),
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    body = template()
    resources, parameters = body["Resources"], body["Parameters"]
    parameters = {**parameters, "ModuleName": {"Default": MODULE}}
    config = {"stepfunctions": {"execute_state_machine": execute}, "lambda": {"use_docker": False}}
    with mock_aws(config=config):  # type: ignore[arg-type]
        handler.job_store.client.cache_clear()
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        key_arn = boto3.client("kms", region_name=REGION).create_key(Description="jobs")["KeyMetadata"]["Arn"]
        role = boto3.client("iam", region_name=REGION).create_role(RoleName="jobs-test", AssumeRolePolicyDocument="{}")[
            "Role"
        ]["Arn"]
        lambda_ = boto3.client("lambda", region_name=REGION)
        arns, names = {}, {}
        for logical in ("WorkerFunction", "ReduceFunction", "AttemptsFunction"):
            properties = resources[logical]["Properties"]
            names[logical] = _template_value(properties["FunctionName"], parameters)
            arns[logical] = lambda_.create_function(
                FunctionName=names[logical],
                Role=role,
                PackageType="Image",
                Code={"ImageUri": f"123456789012.dkr.ecr.{REGION}.amazonaws.com/fair-forge-{MODULE}:test"},
                ImageConfig=properties["ImageConfig"],
                Timeout=int(_template_value(properties["Timeout"], parameters)),
                MemorySize=int(_template_value(properties["MemorySize"], parameters)),
            )["FunctionArn"]
        values = {
            "WorkerFunctionArn": arns["WorkerFunction"],
            "ReduceFunctionArn": arns["ReduceFunction"],
            "AttemptsFunctionArn": arns["AttemptsFunction"],
            "JobsBucket": BUCKET,
        }
        substitutions = resources["StateMachine"]["Properties"]["DefinitionSubstitutions"]
        assert set(substitutions) == set(values), "the template's DefinitionSubstitutions changed: update the harness"
        definition = re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], ASL_FILE.read_text())
        machine = resources["StateMachine"]["Properties"]
        state_machine_arn = boto3.client("stepfunctions", region_name=REGION).create_state_machine(
            name=_template_value(machine["StateMachineName"], parameters),
            definition=definition,
            roleArn=role,
            type=machine["StateMachineType"],
        )["stateMachineArn"]
        aws = JobsAWS(
            bucket=BUCKET,
            key_arn=key_arn,
            state_machine_arn=state_machine_arn,
            worker_name=names["WorkerFunction"],
            reduce_name=names["ReduceFunction"],
            attempts_name=names["AttemptsFunction"],
        )
        table = resources["JobsBudgetTable"]["Properties"]
        budget_table = _template_value(table["TableName"], parameters)
        boto3.client("dynamodb", region_name=REGION).create_table(
            TableName=budget_table,
            BillingMode=table["BillingMode"],
            AttributeDefinitions=table["AttributeDefinitions"],
            KeySchema=table["KeySchema"],
        )
        monkeypatch.setenv("JOBS_BUCKET", BUCKET)
        monkeypatch.setenv("JOBS_STATE_MACHINE_ARN", state_machine_arn)
        monkeypatch.setenv("JOBS_KMS_KEY_ID", key_arn)
        monkeypatch.setenv("JOBS_BUDGET_TABLE", budget_table)

        def invoke(
            backend: Any, function_name: str, qualifier: Any, body: Any, headers: Any, response_headers: Any
        ) -> bytes:
            return aws._invoke(backend, function_name, qualifier, body, response_headers)

        monkeypatch.setattr(LambdaSimpleBackend, "invoke", invoke)
        try:
            yield aws
        finally:
            handler.job_store.client.cache_clear()
