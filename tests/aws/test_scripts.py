"""scripts/deploy.sh, update.sh, rollback.sh, logs.sh and cleanup.sh, run for real with AWS CLI v2 against moto's server.

Only docker is faked (no Docker engine here): a script in the test's tmp dir that records its arguments and,
on `push`, puts the image manifest into moto's ECR, as a registry push would. moto runs with
MOTO_LAMBDA_STUB_ECR=false, so Lambda's CreateFunction and UpdateFunctionCode fail unless that image exists.

What moto's CloudFormation does not implement (AWS::ApiGateway::Stage, ApiKey, UsagePlan, UsagePlanKey) it
skips with a warning, so those four are checked by cfn-lint (test_lint.py), not here.
"""

from __future__ import annotations

import ast
import json
import queue
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
from botocore.exceptions import ClientError

from tests.aws.conftest import (
    LOG_GROUP,
    MODULE,
    NAME,
    REGION,
    FakeDocker,
    Scripts,
    aws,
    script_env,
    stop,
)

# A test here runs up to seven scripts against moto (about a minute on a quiet machine): pytest-timeout's
# 300 s default would be less than ten times that, so the limit is set for this module.
pytestmark = [pytest.mark.aws, pytest.mark.timeout(900)]

TAG = re.compile(r"^\d{8}T\d{6}Z(-[0-9a-f]{12}(-dirty)?)?$")  # <UTC time>-<git sha>[-dirty]


def image_of_function(moto: str) -> str:
    return str(aws(moto, "lambda").get_function(FunctionName=NAME)["Code"]["ImageUri"])


def ecr_tags(moto: str) -> set[str]:
    images = aws(moto, "ecr").describe_images(repositoryName=NAME)["imageDetails"]
    return {tag for image in images for tag in image.get("imageTags", [])}


def rest_apis(moto: str) -> list[dict[str, str]]:
    return [api for api in aws(moto, "apigateway").get_rest_apis()["items"] if api["name"] == NAME]


def stack_exists(moto: str) -> bool:
    try:
        stacks = aws(moto, "cloudformation").describe_stacks(StackName=NAME)["Stacks"]
    except ClientError as exc:
        assert "does not exist" in str(exc)
        return False
    return stacks[0]["StackStatus"] != "DELETE_COMPLETE"


def repository_exists(moto: str) -> bool:
    try:
        aws(moto, "ecr").describe_repositories(repositoryNames=[NAME])
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "RepositoryNotFoundException"
        return False
    return True


def function_exists(moto: str, name: str = NAME) -> bool:
    try:
        aws(moto, "lambda").get_function(FunctionName=name)
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "ResourceNotFoundException"
        return False
    return True


WORKER, REDUCE, ATTEMPTS = f"{NAME}-worker", f"{NAME}-reduce", f"{NAME}-attempts"
LOG_GROUPS = (LOG_GROUP, f"/aws/lambda/{WORKER}", f"/aws/lambda/{REDUCE}", f"/aws/lambda/{ATTEMPTS}")
ACCESS_LOG_GROUP = f"/aws/apigateway/{NAME}-access"
STATE_MACHINE_ARN = f"arn:aws:states:{REGION}:123456789012:stateMachine:{NAME}"
ARTIFACTS_BUCKET = f"fair-forge-artifacts-123456789012-{REGION}"
ASL_FILE = Path(__file__).resolve().parents[2] / "statemachine" / "evaluation.asl.json"


@dataclass
class DeployedJobs:
    bucket: str
    key_id: str


def deployed_jobs(moto: str) -> DeployedJobs:
    """The stack's jobs bucket and KMS key (from its resources: moto gives `deploy` stacks no outputs)."""
    summaries = aws(moto, "cloudformation").list_stack_resources(StackName=NAME)["StackResourceSummaries"]
    physical = {r.get("LogicalResourceId"): r.get("PhysicalResourceId") for r in summaries}
    return DeployedJobs(bucket=physical["JobsBucket"], key_id=physical["JobsKey"])


def buckets(moto: str) -> set[str]:
    return {bucket["Name"] for bucket in aws(moto, "s3").list_buckets()["Buckets"]}


def state_machine_exists(moto: str) -> bool:
    try:
        aws(moto, "stepfunctions").describe_state_machine(stateMachineArn=STATE_MACHINE_ARN)
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "StateMachineDoesNotExist"
        return False
    return True


def log_group_exists(moto: str) -> bool:
    groups = aws(moto, "logs").describe_log_groups(logGroupNamePrefix=LOG_GROUP)["logGroups"]
    return any(group["logGroupName"] == LOG_GROUP for group in groups)


def roles(moto: str) -> list[str]:
    return [role["RoleName"] for role in aws(moto, "iam").list_roles()["Roles"] if role["RoleName"].startswith(NAME)]


def policy_document(document: dict[str, Any] | str) -> dict[str, Any]:
    """boto3 decodes AWS's URL-encoded document into a dict; moto returns a policy that came from
    CloudFormation as the text of a Python dict."""
    if isinstance(document, dict):
        return document
    try:
        return dict(json.loads(document))
    except json.JSONDecodeError:
        return dict(ast.literal_eval(document))


class LineReader:
    """Reads a pipe's lines on a thread, so that a test can wait for one with a time limit."""

    def __init__(self, pipe: IO[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, args=(pipe,), daemon=True).start()

    def _pump(self, pipe: IO[str]) -> None:
        for line in pipe:
            self._lines.put(line)

    def wait_for(self, text: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        seen: list[str] = []
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"{text!r} not printed within {timeout_s} s; printed: {seen!r}")


def put_log_events(moto: str, *messages: str, group: str = LOG_GROUP) -> None:
    logs = aws(moto, "logs")
    stream = f"2026/01/01/[$LATEST]{time.time_ns()}"
    logs.create_log_stream(logGroupName=group, logStreamName=stream)
    now_ms = int(time.time() * 1000)
    logs.put_log_events(
        logGroupName=group,
        logStreamName=stream,
        logEvents=[{"timestamp": now_ms + i, "message": message} for i, message in enumerate(messages)],
    )


def test_deploy_update_logs_cleanup(scripts: Scripts, moto: str, fake_docker: FakeDocker) -> None:
    # --- deploy: repository, image, stack, function, API and log group all exist afterwards.
    out = scripts.ok("deploy", MODULE, REGION)
    [first_image] = fake_docker.pushed()
    repository, _, first_tag = first_image.rpartition(":")
    assert repository == f"123456789012.dkr.ecr.{REGION}.amazonaws.com/{NAME}"
    assert TAG.match(first_tag), first_tag

    calls = fake_docker.calls()
    [build] = [call for call in calls if "build" in call[:2]]
    assert build[:2] == ["buildx", "build"]
    assert build[build.index("--platform") + 1] == "linux/amd64"
    assert "--provenance=false" in build  # else Lambda gets a manifest list it rejects
    assert build[build.index("--tag") + 1] == first_image
    assert Path(build[-1]) == Path(__file__).resolve().parents[2]  # the repository root is the context
    assert ["login", "--username", "AWS", "--password-stdin", repository.partition("/")[0]] in calls

    ecr = aws(moto, "ecr")
    [repo] = ecr.describe_repositories(repositoryNames=[NAME])["repositories"]
    assert repo["imageTagMutability"] == "IMMUTABLE"
    assert ecr.get_lifecycle_policy(repositoryName=NAME)["lifecyclePolicyText"]
    assert ecr_tags(moto) == {first_tag}

    stack = aws(moto, "cloudformation").describe_stacks(StackName=NAME)["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    parameters = {p["ParameterKey"]: p["ParameterValue"] for p in stack["Parameters"]}
    assert parameters["ImageUri"] == first_image
    assert parameters["RequireApiKey"] == "true"

    function = aws(moto, "lambda").get_function(FunctionName=NAME)
    assert function["Code"]["ImageUri"] == first_image
    assert function["Configuration"]["Timeout"] == 30
    role_arn = function["Configuration"]["Role"]
    assert role_arn.rsplit("/", 1)[-1] in roles(moto)
    variables = function["Configuration"]["Environment"]["Variables"]
    assert str(variables["FAIR_FORGE_SYNC_BUDGET_S"]) == "27"

    [api] = rest_apis(moto)
    apigateway = aws(moto, "apigateway")
    paths = {resource["path"]: resource for resource in apigateway.get_resources(restApiId=api["id"])["items"]}
    assert {"/", "/run", "/health"} <= set(paths)
    run = apigateway.get_method(restApiId=api["id"], resourceId=paths["/run"]["id"], httpMethod="POST")
    assert run["apiKeyRequired"] is True
    assert run["methodIntegration"]["type"] == "AWS_PROXY"
    assert function["Configuration"]["FunctionArn"] in run["methodIntegration"]["uri"]
    health = apigateway.get_method(restApiId=api["id"], resourceId=paths["/health"]["id"], httpMethod="GET")
    assert health["methodIntegration"]["type"] == "AWS_PROXY"

    groups = {
        g["logGroupName"]: g for g in aws(moto, "logs").describe_log_groups(logGroupNamePrefix=LOG_GROUP)["logGroups"]
    }
    assert set(groups) == set(LOG_GROUPS)
    assert {g["retentionInDays"] for g in groups.values()} == {14}
    # API Gateway's access log, kept as long. (moto's CloudFormation skips AWS::ApiGateway::Stage and
    # ::Account, so the stage's AccessLogSetting is checked on the template: test_template.py.)
    [access_log] = aws(moto, "logs").describe_log_groups(logGroupNamePrefix=ACCESS_LOG_GROUP)["logGroups"]
    assert (access_log["logGroupName"], access_log["retentionInDays"]) == (ACCESS_LOG_GROUP, 14)

    # The asynchronous jobs: the bucket, the key, the state machine from the uploaded ASL file, the two
    # functions of the same image, the routes.
    jobs = deployed_jobs(moto)
    assert jobs.bucket in buckets(moto)
    assert aws(moto, "s3").get_bucket_encryption(Bucket=jobs.bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    # (moto's CloudFormation drops a bucket's lifecycle and public access block: test_lint.py checks those.)
    # The key works. (moto cannot DescribeKey a key made from a template: it keeps the KeyPolicy as a dict.)
    assert aws(moto, "kms").encrypt(KeyId=jobs.key_id, Plaintext=b"x", EncryptionContext={"job_id": "x"})
    machine = aws(moto, "stepfunctions").describe_state_machine(stateMachineArn=STATE_MACHINE_ARN)
    assert machine["type"] == "STANDARD"
    definition_bucket, definition_key = (
        parameters["StateMachineDefinitionBucket"],
        parameters["StateMachineDefinitionKey"],
    )
    assert definition_bucket == ARTIFACTS_BUCKET
    uploaded = aws(moto, "s3").get_object(Bucket=definition_bucket, Key=definition_key)["Body"].read()
    assert uploaded == ASL_FILE.read_bytes()  # the one ASL file is what the stack's state machine is made from
    for name in (WORKER, REDUCE, ATTEMPTS):  # (moto's CloudFormation drops ImageConfig: test_lint.py checks them)
        configuration = aws(moto, "lambda").get_function(FunctionName=name)
        assert configuration["Code"]["ImageUri"] == first_image
        assert configuration["Configuration"]["Environment"]["Variables"]["JOBS_BUCKET"] == jobs.bucket
    assert variables["JOBS_BUCKET"] == jobs.bucket
    assert variables["JOBS_STATE_MACHINE_ARN"] == STATE_MACHINE_ARN
    assert {"/jobs", "/jobs/{id}"} <= set(paths)
    submit = apigateway.get_method(restApiId=api["id"], resourceId=paths["/jobs"]["id"], httpMethod="POST")
    status = apigateway.get_method(restApiId=api["id"], resourceId=paths["/jobs/{id}"]["id"], httpMethod="GET")
    for method in (submit, status):
        assert method["apiKeyRequired"] is True
        assert method["methodIntegration"]["type"] == "AWS_PROXY"
        assert function["Configuration"]["FunctionArn"] in method["methodIntegration"]["uri"]
    # A job's data in the bucket must not stop cleanup.
    aws(moto, "s3").put_object(Bucket=jobs.bucket, Key="jobs/0123/request.json", Body=b"{}")

    # What the user is told: the URL, how to read the key (never the key itself), a curl to paste.
    invoke_url = f"https://{api['id']}.execute-api.{REGION}.amazonaws.com/prod"
    assert f"Invoke URL:  {invoke_url}" in out
    assert "apigateway get-api-key" in out
    assert f"curl -sS -X POST '{invoke_url}/run'" in out
    assert "x-api-key: $API_KEY" in out
    assert f"POST the same body to {invoke_url}/jobs" in out

    # --- deploy again: the same stack and API, updated in place to a new image.
    scripts.ok("deploy", MODULE, REGION, "--param", "MemorySize=2048")
    second_image = fake_docker.pushed()[-1]
    assert second_image != first_image
    assert image_of_function(moto) == second_image
    assert aws(moto, "lambda").get_function(FunctionName=NAME)["Configuration"]["MemorySize"] == 2048
    assert [a["id"] for a in rest_apis(moto)] == [api["id"]]
    assert aws(moto, "cloudformation").describe_stacks(StackName=NAME)["Stacks"][0]["StackId"] == stack["StackId"]

    # --- update: a new tag, and the function runs it; other settings stay as they were.
    out = scripts.ok("update", MODULE, REGION)
    third_image = fake_docker.pushed()[-1]
    assert third_image not in (first_image, second_image)
    assert image_of_function(moto) == third_image
    assert f"to:   {third_image}" in out
    for name in (WORKER, REDUCE, ATTEMPTS):  # the jobs' functions run the new image too
        assert aws(moto, "lambda").get_function(FunctionName=name)["Code"]["ImageUri"] == third_image
    assert aws(moto, "lambda").get_function(FunctionName=NAME)["Configuration"]["MemorySize"] == 2048
    assert ecr_tags(moto) == {image.rpartition(":")[2] for image in (first_image, second_image, third_image)}

    # An immutable tag is never pushed twice: a clear error before any build, and nothing changes.
    done = scripts.run("update", MODULE, REGION, env={"IMAGE_TAG": third_image.rpartition(":")[2]})
    assert done.returncode != 0
    assert "already exists and tags are immutable" in done.stderr
    assert image_of_function(moto) == third_image

    # --- logs: the events in the log group are printed.
    put_log_events(moto, "START RequestId: 1", '{"level":"INFO","message":"evaluated 3 conversations"}')
    out = scripts.ok("logs", MODULE, REGION, "--since", "1h", "--no-follow")
    assert "START RequestId: 1" in out
    assert "evaluated 3 conversations" in out

    # --- cleanup without confirmation removes nothing.
    done = scripts.run("cleanup", MODULE, REGION, stdin="no\n")
    assert done.returncode != 0
    assert "nothing was removed" in done.stderr
    assert stack_exists(moto) and repository_exists(moto) and function_exists(moto)

    # --- cleanup, confirmed on stdin: none of it is left. A job still running is stopped first.
    running_job = "0123456789abcdef0123456789abcdef"
    execution = aws(moto, "stepfunctions").start_execution(stateMachineArn=STATE_MACHINE_ARN, name=running_job)
    out = scripts.ok("cleanup", MODULE, REGION, stdin="yes\n")
    assert f"Stopping the running job {running_job}" in out
    assert f"running job {running_job} (stopped)" in out
    assert execution["executionArn"].endswith(running_job)
    assert f"CloudFormation stack {NAME}" in out
    assert f"ECR repository {NAME}" in out
    assert not stack_exists(moto)
    assert not repository_exists(moto)
    assert not function_exists(moto)
    assert rest_apis(moto) == []
    assert not log_group_exists(moto)
    assert roles(moto) == []
    assert jobs.bucket not in buckets(moto)
    assert ARTIFACTS_BUCKET not in buckets(moto)
    assert not state_machine_exists(moto)
    assert not any(function_exists(moto, name) for name in (WORKER, REDUCE, ATTEMPTS))
    # (The KMS key is not checked here: moto's CloudFormation never deletes a stack's key; AWS schedules it.)
    assert aws(moto, "logs").describe_log_groups(logGroupNamePrefix=LOG_GROUP)["logGroups"] == []
    assert aws(moto, "logs").describe_log_groups(logGroupNamePrefix=ACCESS_LOG_GROUP)["logGroups"] == []
    assert f"the jobs bucket {jobs.bucket}" in out

    # --- and again: nothing to do, and that is a success.
    out = scripts.ok("cleanup", MODULE, REGION, "--yes")
    assert "Nothing to remove" in out


def test_deploy_arm64_without_api_key(scripts: Scripts, moto: str, fake_docker: FakeDocker) -> None:
    secret = f"arn:aws:secretsmanager:{REGION}:123456789012:secret:llm-key-AbCdEf"
    out = scripts.ok(
        "deploy", MODULE, REGION, "--arch", "arm64", "--no-api-key", "--secret-arn", secret,
        "--agent-secret-prefix", "fair-forge/agents/", "--agent-hosts", "agent.internal,agent2.internal",
    )  # fmt: skip
    [build] = [call for call in fake_docker.calls() if "build" in call[:2]]
    assert build[build.index("--platform") + 1] == "linux/arm64"

    stack = aws(moto, "cloudformation").describe_stacks(StackName=NAME)["Stacks"][0]
    parameters = {p["ParameterKey"]: p["ParameterValue"] for p in stack["Parameters"]}
    assert parameters["Architecture"] == "arm64"
    assert parameters["RequireApiKey"] == "false"

    [api] = rest_apis(moto)
    apigateway = aws(moto, "apigateway")
    run_id = next(r["id"] for r in apigateway.get_resources(restApiId=api["id"])["items"] if r["path"] == "/run")
    assert apigateway.get_method(restApiId=api["id"], resourceId=run_id, httpMethod="POST")["apiKeyRequired"] is False
    assert "No API key" in out and "x-api-key" not in out

    # The function may read that secret, and only that one.
    configuration = aws(moto, "lambda").get_function(FunctionName=NAME)["Configuration"]
    assert configuration["Environment"]["Variables"]["LLM_API_KEY_SECRET_ARN"] == secret
    iam = aws(moto, "iam")
    role = configuration["Role"].rsplit("/", 1)[-1]
    documents = [
        iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
        for name in iam.list_role_policies(RoleName=role)["PolicyNames"]
    ]
    documents = [policy_document(d) for d in documents]
    secret_statements = [s for d in documents for s in d["Statement"] if "secretsmanager" in str(s["Action"])]
    assert [s["Resource"] for s in secret_statements] == [secret]
    # So may the jobs' worker (it builds the judge with the server's key), and it finds the secret's ARN.
    worker = aws(moto, "lambda").get_function(FunctionName=WORKER)["Configuration"]
    assert worker["Environment"]["Variables"]["LLM_API_KEY_SECRET_ARN"] == secret
    worker_role = worker["Role"].rsplit("/", 1)[-1]
    worker_documents = [
        policy_document(iam.get_role_policy(RoleName=worker_role, PolicyName=name)["PolicyDocument"])
        for name in iam.list_role_policies(RoleName=worker_role)["PolicyNames"]
    ]
    assert [
        s["Resource"] for d in worker_documents for s in d["Statement"] if "secretsmanager" in str(s["Action"])
    ] == [secret]
    # The agent's options reach the API (which checks a request) and the attempts function (which reads the
    # agent secrets under the prefix, and only it: the worker above reads the LLM key's secret alone).
    for name in (NAME, ATTEMPTS):
        variables = aws(moto, "lambda").get_function(FunctionName=name)["Configuration"]["Environment"]["Variables"]
        assert variables["FAIR_FORGE_AGENT_SECRET_PREFIX"] == "fair-forge/agents/", name
        assert variables["FAIR_FORGE_AGENT_HOSTS"] == "agent.internal,agent2.internal", name
    attempts_role = aws(moto, "lambda").get_function(FunctionName=ATTEMPTS)["Configuration"]["Role"].rsplit("/", 1)[-1]
    attempts_documents = [
        policy_document(iam.get_role_policy(RoleName=attempts_role, PolicyName=name)["PolicyDocument"])
        for name in iam.list_role_policies(RoleName=attempts_role)["PolicyNames"]
    ]
    assert sorted(
        str(s["Resource"]) for d in attempts_documents for s in d["Statement"] if "secretsmanager" in str(s["Action"])
    ) == sorted([secret, f"arn:aws:secretsmanager:{REGION}:123456789012:secret:fair-forge/agents/*"])

    # update.sh builds for the architecture the stack was deployed with.
    scripts.ok("update", MODULE, REGION)
    builds = [call for call in fake_docker.calls() if "build" in call[:2]]
    assert builds[-1][builds[-1].index("--platform") + 1] == "linux/arm64"
    assert image_of_function(moto) == fake_docker.pushed()[-1]

    scripts.ok("cleanup", MODULE, REGION, "--yes")
    assert not stack_exists(moto) and not repository_exists(moto) and rest_apis(moto) == []


LOG_WAIT_S = 120.0


def test_logs_follows_by_default(scripts: Scripts, moto: str) -> None:
    aws(moto, "logs").create_log_group(logGroupName=LOG_GROUP)
    put_log_events(moto, "before the tail started")
    tail = scripts.follow("logs", MODULE, REGION)
    try:
        assert tail.stdout is not None
        lines = LineReader(tail.stdout)
        # Printed at once, not when a pipe buffer fills: logs.sh makes the CLI's output unbuffered.
        lines.wait_for("before the tail started", timeout_s=LOG_WAIT_S)
        # Still running, and an event written now shows up too (the CLI polls every 5 s).
        assert tail.poll() is None
        put_log_events(moto, "written while following")
        lines.wait_for("written while following", timeout_s=LOG_WAIT_S)
    finally:
        stop(tail)


def test_logs_of_the_job_functions_and_the_access_log(scripts: Scripts, moto: str) -> None:
    for function in ("worker", "reduce", "attempts"):
        aws(moto, "logs").create_log_group(logGroupName=f"{LOG_GROUP}-{function}")
        put_log_events(moto, f"a line of the {function}", group=f"{LOG_GROUP}-{function}")
    aws(moto, "logs").create_log_group(logGroupName=ACCESS_LOG_GROUP)
    put_log_events(moto, '{"requestId":"r1","status":"200"}', group=ACCESS_LOG_GROUP)
    out = scripts.ok("logs", MODULE, REGION, "--function", "worker", "--since", "1h", "--no-follow")
    assert "a line of the worker" in out and "a line of the reduce" not in out
    out = scripts.ok("logs", MODULE, REGION, "--function", "attempts", "--since", "1h", "--no-follow")
    assert "a line of the attempts" in out and "a line of the worker" not in out
    out = scripts.ok("logs", MODULE, REGION, "--function", "access", "--since", "1h", "--no-follow")
    assert '"requestId":"r1"' in out and "a line of the worker" not in out
    done = scripts.run("logs", MODULE, REGION, "--function", "api; rm -rf /", "--no-follow")
    assert done.returncode != 0 and "--function must be api, worker, reduce, attempts or access" in done.stderr


def test_logs_of_a_module_that_is_not_deployed(scripts: Scripts) -> None:
    done = scripts.run("logs", "nothing-here", REGION, "--no-follow")
    assert done.returncode != 0
    assert "no log group /aws/lambda/fair-forge-nothing-here" in done.stderr


def test_update_before_deploy_says_to_deploy(scripts: Scripts, fake_docker: FakeDocker) -> None:
    done = scripts.run("update", MODULE, REGION)
    assert done.returncode != 0
    assert f"deploy it first with scripts/deploy.sh {MODULE} {REGION}" in done.stderr
    assert fake_docker.pushed() == []


def test_deploy_checks_its_prerequisites(tmp_path: Path, aws_cli_v2: Path, moto: str, fake_docker: FakeDocker) -> None:
    env = script_env(tmp_path, aws_cli_v2, moto, fake_docker)

    # No docker daemon: said plainly, before anything is created.
    done = Scripts(env).run("deploy", MODULE, REGION, env={"FAKE_DOCKER_DAEMON_DOWN": "1"})
    assert done.returncode != 0
    assert "is the Docker daemon running" in done.stderr
    assert not repository_exists(moto)

    # No docker at all.
    done = Scripts(env).run("deploy", MODULE, REGION, env={"DOCKER": "no-such-docker"})
    assert done.returncode != 0
    assert "'no-such-docker' not found: install Docker" in done.stderr

    # No AWS CLI: a PATH with only what bash needs to start the script.
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    for tool in ("bash", "dirname"):
        found = Path("/usr/bin", tool) if Path("/usr/bin", tool).exists() else Path("/bin", tool)
        (bare / tool).symlink_to(found)
    done = Scripts(env).run("deploy", MODULE, REGION, env={"PATH": str(bare)})
    assert done.returncode != 0
    assert "the AWS CLI is not installed" in done.stderr


def test_deploy_trusts_ecr_not_the_push(scripts: Scripts, moto: str, fake_docker: FakeDocker) -> None:
    # The emulator checks images as AWS does: Lambda refuses one that ECR does not have...
    role = "arn:aws:iam::123456789012:role/any"
    missing = f"123456789012.dkr.ecr.{REGION}.amazonaws.com/{NAME}:not-pushed"
    aws(moto, "ecr").create_repository(repositoryName=NAME)
    with pytest.raises(ClientError, match="not-pushed"):
        aws(moto, "lambda").create_function(
            FunctionName=NAME, PackageType="Image", Code={"ImageUri": missing}, Role=role
        )
    # ...and deploy.sh stops right after a push that ECR does not confirm, before touching the stack.
    done = scripts.run("deploy", MODULE, REGION, env={"FAKE_DOCKER_PUSH_LOSES_IMAGE": "1"})
    assert done.returncode != 0
    assert "docker push finished but ECR does not list" in done.stderr
    assert len(fake_docker.pushed()) == 1
    assert not stack_exists(moto)


@pytest.mark.parametrize("script", ["deploy", "update", "rollback", "cleanup", "logs"])
def test_help_and_usage_errors(scripts: Scripts, script: str) -> None:
    helped = scripts.run(script, "--help")
    assert helped.returncode == 0
    assert helped.stdout.startswith(f"Usage: scripts/{script}.sh <module> <region>")
    assert "AWS_ENDPOINT_URL" in helped.stdout

    missing_region = scripts.run(script, MODULE)
    assert missing_region.returncode != 0
    assert "expected <module> <region>" in missing_region.stderr

    bad_module = scripts.run(script, "Bad_Name", REGION)
    assert bad_module.returncode != 0
    assert "module name 'Bad_Name'" in bad_module.stderr
