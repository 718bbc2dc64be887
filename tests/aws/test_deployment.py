"""The second deploy: a route added by a stack update goes live, and `deploy.sh --dry-run` changes nothing.

Run for real (AWS CLI v2, scripts/deploy.sh) against moto's server, from a copy of the project whose
template.yaml the test edits, as a developer edits theirs between two deployments.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from tests.aws.conftest import MODULE, NAME, REGION, ROOT, FakeDocker, Scripts, aws, script_env

# Two to three deployments on moto per test (about a minute on a quiet machine); see test_scripts.py.
pytestmark = [pytest.mark.aws, pytest.mark.timeout(900)]

# What the scripts read from the project: themselves, the template, the state machine, the image's recipe.
PROJECT_FILES = ("template.yaml", "Dockerfile", ".dockerignore", "requirements.lock", "examples/calculator.json")
PROJECT_DIRS = ("scripts", "statemachine")

# A route the deployed API does not have: GET /ping, a Lambda proxy like the others.
PING_ROUTE = """
  PingResource:
    Type: AWS::ApiGateway::Resource
    Properties:
      RestApiId: !Ref RestApi
      ParentId: !GetAtt RestApi.RootResourceId
      PathPart: ping

  PingGetMethod:
    Type: AWS::ApiGateway::Method
    Properties:
      RestApiId: !Ref RestApi
      ResourceId: !Ref PingResource
      HttpMethod: GET
      AuthorizationType: NONE
      ApiKeyRequired: !If [UseApiKey, true, false]
      Integration:
        Type: AWS_PROXY
        IntegrationHttpMethod: POST
        Uri: !Sub arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/${Function.Arn}/invocations
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of what the scripts use, so that the test can change its template.yaml."""
    copy = tmp_path / "project"
    for name in PROJECT_DIRS:
        shutil.copytree(ROOT / name, copy / name)
    for name in PROJECT_FILES:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    return copy


@pytest.fixture
def copied_scripts(tmp_path: Path, aws_cli_v2: Path, moto: str, fake_docker: FakeDocker, project: Path) -> Scripts:
    return Scripts(env=script_env(tmp_path, aws_cli_v2, moto, fake_docker), root=project)


def add_ping_route(project: Path) -> None:
    template = project / "template.yaml"
    text = template.read_text()
    anchor = "\n  InvokePermission:\n"
    assert text.count(anchor) == 1
    template.write_text(text.replace(anchor, PING_ROUTE + anchor))


def api_id(moto: str) -> str:
    [api] = [a for a in aws(moto, "apigateway").get_rest_apis()["items"] if a["name"] == NAME]
    return str(api["id"])


def paths(moto: str) -> set[str]:
    return {r["path"] for r in aws(moto, "apigateway").get_resources(restApiId=api_id(moto))["items"]}


def served_deployment(moto: str) -> str:
    """The deployment the stage `prod` serves (what callers of the invoke URL get)."""
    return str(aws(moto, "apigateway").get_stage(restApiId=api_id(moto), stageName="prod")["deploymentId"])


def test_a_route_added_by_an_update_goes_live(copied_scripts: Scripts, moto: str, project: Path) -> None:
    copied_scripts.ok("deploy", MODULE, REGION, env={"IMAGE_TAG": "first"})
    first = served_deployment(moto)
    assert "/ping" not in paths(moto)
    deployments = {d["id"] for d in aws(moto, "apigateway").get_deployments(restApiId=api_id(moto))["items"]}
    assert first in deployments

    add_ping_route(project)
    copied_scripts.ok("deploy", MODULE, REGION, env={"IMAGE_TAG": "second"})
    assert "/ping" in paths(moto)  # the stack update added the method...
    second = served_deployment(moto)
    assert second != first  # ...and the stage serves a snapshot taken after it, not the old one
    assert second not in deployments
    latest = max(
        aws(moto, "apigateway").get_deployments(restApiId=api_id(moto))["items"], key=lambda d: d["createdDate"]
    )
    assert latest["id"] == second

    # update.sh (a new image, the same API) also leaves the stage on a snapshot of the API as it is now.
    copied_scripts.ok("update", MODULE, REGION, env={"IMAGE_TAG": "third"})
    assert served_deployment(moto) not in (first, second)


def stack_status(moto: str) -> str | None:
    try:
        [stack] = aws(moto, "cloudformation").describe_stacks(StackName=NAME)["Stacks"]
    except ClientError as exc:
        assert "does not exist" in str(exc)
        return None
    return None if stack["StackStatus"] == "DELETE_COMPLETE" else str(stack["StackStatus"])


def unexecuted_change_sets(moto: str) -> list[str]:
    """Change sets of the stack other than those a deployment executed (moto lists those too)."""
    summaries = aws(moto, "cloudformation").list_change_sets(StackName=NAME)["Summaries"]
    return [s["ChangeSetName"] for s in summaries if s["ExecutionStatus"] != "EXECUTE_COMPLETE"]


def test_dry_run_shows_the_change_set_and_deploys_nothing(
    copied_scripts: Scripts, moto: str, project: Path, fake_docker: FakeDocker
) -> None:
    # Before the first deployment: every resource would be added; afterwards nothing exists, not even the
    # ECR repository or the artifacts bucket, and docker was never asked for anything.
    out = copied_scripts.ok("deploy", MODULE, REGION, "--dry-run")
    assert "nothing was deployed" in out
    for logical, kind in (("Function", "AWS::Lambda::Function"), ("RestApi", "AWS::ApiGateway::RestApi")):
        assert any(line.split()[:3] == ["Add", logical, kind] for line in out.splitlines()), out
    assert stack_status(moto) is None
    assert aws(moto, "ecr").describe_repositories()["repositories"] == []
    assert aws(moto, "s3").list_buckets()["Buckets"] == []
    assert fake_docker.calls() == []

    # After a deployment, with a new route in the template: the change set names it; the API stays as it was.
    copied_scripts.ok("deploy", MODULE, REGION, env={"IMAGE_TAG": "first"})
    pushed, served = fake_docker.pushed(), served_deployment(moto)
    add_ping_route(project)
    out = copied_scripts.ok("deploy", MODULE, REGION, "--dry-run", "--param", "MemorySize=2048")
    lines = [line.split() for line in out.splitlines()]
    assert ["Add", "PingResource", "AWS::ApiGateway::Resource"] in lines
    assert ["Add", "PingGetMethod", "AWS::ApiGateway::Method"] in lines
    assert "/ping" not in paths(moto)
    assert aws(moto, "lambda").get_function(FunctionName=NAME)["Configuration"]["MemorySize"] == 1024
    assert served_deployment(moto) == served
    assert stack_status(moto) == "CREATE_COMPLETE"
    assert unexecuted_change_sets(moto) == []  # the dry run's change set was deleted
    assert fake_docker.pushed() == pushed  # no image built or pushed


def test_dry_run_says_so_when_nothing_changes(copied_scripts: Scripts, moto: str) -> None:
    copied_scripts.ok("deploy", MODULE, REGION, env={"IMAGE_TAG": "first"})
    out = copied_scripts.ok("deploy", MODULE, REGION, "--dry-run")
    assert "No changes" in out or "(none to resources" in out, out
    assert unexecuted_change_sets(moto) == []
