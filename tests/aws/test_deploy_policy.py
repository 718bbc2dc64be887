"""docs/deploy-policy.json, the policy of the identity that runs scripts/*.sh, covers what they and template.yaml do.

Every resource type template.yaml creates maps to the calls CloudFormation makes with the deploying identity's
credentials to create, update and delete it (the table below, written out by hand from the services'
CloudFormation resource handlers); the scripts' own calls are one more row. A type the table does not know
fails, so a new resource in the template cannot go without its permissions. The policy is evaluated the way
IAM matches an Allow (action and resource patterns with * and ?); its conditions are checked on their own.
"""

from __future__ import annotations

import json
import re
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from fair_forge_testing.cloudformation import template

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "docs" / "deploy-policy.json"
# IAM's limit on a customer managed policy: 6,144 characters, white space not counted.
MANAGED_POLICY_MAX_CHARS = 6_144

ACCOUNT, REGION = "123456789012", "us-east-1"
API = f"arn:aws:apigateway:{REGION}::"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/fair-forge-agentic-FunctionRole-1A2B3C4D5E6F"
FUNCTION = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:fair-forge-agentic-worker"
REPOSITORY = f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/fair-forge-agentic"
STACK = f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/fair-forge-agentic/0a1b2c3d"
JOBS_BUCKET = "arn:aws:s3:::fair-forge-agentic-jobsbucket-1a2b3c4d5e6f"
ARTIFACTS = f"arn:aws:s3:::fair-forge-artifacts-{ACCOUNT}-{REGION}"
KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
LOG_GROUP = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/lambda/fair-forge-agentic-worker"
ACCESS_LOG = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/apigateway/fair-forge-agentic-access"
MACHINE = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:fair-forge-agentic"
EXECUTION = f"arn:aws:states:{REGION}:{ACCOUNT}:execution:fair-forge-agentic:0123abcd"
TABLE = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/fair-forge-agentic-job-budgets"
QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT}:fair-forge-agentic-DeadLetterQueue-1A2B3C4D5E6F"


def calls(resource: str, *actions: str) -> list[tuple[str, str]]:
    return [(action, resource) for action in actions]


# resource type -> (action, resource ARN) the deploying identity must be allowed, by CloudFormation's handlers.
NEEDS: dict[str, list[tuple[str, str]]] = {
    "AWS::ApiGateway::RestApi": calls(f"{API}/restapis", "apigateway:POST")
    + calls(f"{API}/restapis/a1b2c3", "apigateway:GET", "apigateway:PATCH", "apigateway:DELETE"),
    "AWS::ApiGateway::Resource": calls(f"{API}/restapis/a1b2c3/resources/r1", "apigateway:POST", "apigateway:DELETE"),
    "AWS::ApiGateway::Method": calls(f"{API}/restapis/a1b2c3/resources/r1/methods/POST", "apigateway:PUT"),
    "AWS::ApiGateway::Deployment": calls(f"{API}/restapis/a1b2c3/deployments", "apigateway:POST"),
    "AWS::ApiGateway::Stage": calls(f"{API}/restapis/a1b2c3/stages", "apigateway:POST")
    + calls(f"{API}/restapis/a1b2c3/stages/prod", "apigateway:PATCH", "apigateway:DELETE"),
    "AWS::ApiGateway::ApiKey": calls(f"{API}/apikeys", "apigateway:POST")
    + calls(f"{API}/apikeys/k1", "apigateway:GET", "apigateway:DELETE"),
    "AWS::ApiGateway::UsagePlan": calls(f"{API}/usageplans", "apigateway:POST")
    + calls(f"{API}/usageplans/u1", "apigateway:PATCH", "apigateway:DELETE"),
    "AWS::ApiGateway::UsagePlanKey": calls(f"{API}/usageplans/u1/keys", "apigateway:POST"),
    # The account-level setting: API Gateway's CloudWatch role (SetApiGatewayAccountRole).
    "AWS::ApiGateway::Account": calls(f"{API}/account", "apigateway:GET", "apigateway:PATCH"),
    "AWS::Lambda::Function": calls(
        FUNCTION,
        "lambda:CreateFunction",
        "lambda:GetFunction",
        "lambda:UpdateFunctionCode",
        "lambda:UpdateFunctionConfiguration",
        "lambda:PutFunctionConcurrency",
        "lambda:TagResource",
        "lambda:DeleteFunction",
    )
    # Lambda reads the image with the caller's rights, and grants itself the repository's policy.
    + calls(REPOSITORY, "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:SetRepositoryPolicy")
    # SubnetIds: Lambda checks the subnets and groups with the caller's rights.
    + calls("*", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups", "ec2:DescribeVpcs")
    # KmsKeyArn: Lambda encrypts the environment with the operator's key, through a grant.
    + calls(KEY, "kms:CreateGrant", "kms:Encrypt", "kms:DescribeKey"),
    "AWS::Lambda::Permission": calls(FUNCTION, "lambda:AddPermission", "lambda:RemovePermission"),
    "AWS::IAM::Role": calls(
        ROLE,
        "iam:CreateRole",
        "iam:GetRole",
        "iam:TagRole",
        "iam:UpdateRoleDescription",
        "iam:PutRolePolicy",
        "iam:DeleteRolePolicy",
        "iam:AttachRolePolicy",
        "iam:DetachRolePolicy",
        "iam:ListAttachedRolePolicies",
        "iam:ListRolePolicies",
        "iam:DeleteRole",
        "iam:PassRole",
    ),
    "AWS::IAM::Policy": calls(ROLE, "iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy"),
    "AWS::DynamoDB::Table": calls(
        TABLE,
        "dynamodb:CreateTable",
        "dynamodb:DescribeTable",
        "dynamodb:UpdateTable",
        "dynamodb:UpdateTimeToLive",
        "dynamodb:DescribeTimeToLive",
        "dynamodb:DescribeContinuousBackups",
        "dynamodb:TagResource",
        "dynamodb:DeleteTable",
    )
    + calls(KEY, "kms:CreateGrant", "kms:DescribeKey"),
    "AWS::S3::Bucket": calls(
        JOBS_BUCKET,
        "s3:CreateBucket",
        "s3:PutEncryptionConfiguration",
        "s3:PutBucketPublicAccessBlock",
        "s3:PutBucketOwnershipControls",
        "s3:PutLifecycleConfiguration",
        "s3:PutBucketTagging",
        "s3:GetBucketLocation",
        "s3:DeleteBucket",
    ),
    "AWS::S3::BucketPolicy": calls(JOBS_BUCKET, "s3:PutBucketPolicy", "s3:GetBucketPolicy", "s3:DeleteBucketPolicy"),
    # The definition is read from the artifacts bucket with the caller's rights.
    "AWS::StepFunctions::StateMachine": calls(
        MACHINE,
        "states:CreateStateMachine",
        "states:DescribeStateMachine",
        "states:UpdateStateMachine",
        "states:TagResource",
        "states:DeleteStateMachine",
    )
    + calls(f"{ARTIFACTS}/agentic/evaluation-0123456789abcdef.asl.json", "s3:GetObject"),
    "AWS::Logs::LogGroup": [
        (action, group)
        for group in (LOG_GROUP, ACCESS_LOG)
        for action in (
            "logs:CreateLogGroup",
            "logs:PutRetentionPolicy",
            "logs:AssociateKmsKey",
            "logs:TagResource",
            "logs:DeleteLogGroup",
        )
    ]
    + calls(f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:*", "logs:DescribeLogGroups"),
    "AWS::KMS::Key": calls("*", "kms:CreateKey")
    + calls(KEY, "kms:DescribeKey", "kms:EnableKeyRotation", "kms:PutKeyPolicy", "kms:ScheduleKeyDeletion"),
    "AWS::SQS::Queue": calls(
        QUEUE, "sqs:CreateQueue", "sqs:GetQueueAttributes", "sqs:SetQueueAttributes", "sqs:TagQueue", "sqs:DeleteQueue"
    ),
}
# What the scripts call themselves (deploy, update, rollback, logs, cleanup), beside the stack's resources.
SCRIPTS: list[tuple[str, str]] = (
    calls(
        STACK,
        "cloudformation:CreateChangeSet",
        "cloudformation:DescribeChangeSet",
        "cloudformation:ExecuteChangeSet",
        "cloudformation:DeleteChangeSet",
        "cloudformation:ListChangeSets",
        "cloudformation:DescribeStacks",
        "cloudformation:DescribeStackEvents",
        "cloudformation:ListStackResources",
        "cloudformation:GetTemplate",
        "cloudformation:DeleteStack",
    )
    + calls("*", "ecr:GetAuthorizationToken")
    + calls(
        REPOSITORY,
        "ecr:CreateRepository",
        "ecr:DescribeRepositories",
        "ecr:PutLifecyclePolicy",
        "ecr:TagResource",
        "ecr:DescribeImages",
        "ecr:BatchCheckLayerAvailability",
        "ecr:InitiateLayerUpload",
        "ecr:UploadLayerPart",
        "ecr:CompleteLayerUpload",
        "ecr:PutImage",
        "ecr:DeleteRepository",
    )
    + calls(
        ARTIFACTS,
        "s3:CreateBucket",
        "s3:ListBucket",
        "s3:PutBucketPublicAccessBlock",
        "s3:PutEncryptionConfiguration",
        "s3:DeleteBucket",
    )
    + calls(f"{ARTIFACTS}/agentic/evaluation-0123456789abcdef.asl.json", "s3:PutObject", "s3:DeleteObject")
    + calls(f"{JOBS_BUCKET}/jobs/0123/request.json", "s3:DeleteObject")
    + calls(FUNCTION, "lambda:GetFunction")
    + calls(f"{API}/restapis", "apigateway:GET")
    + calls(f"{API}/restapis/a1b2c3/deployments", "apigateway:POST")
    + calls(f"{API}/apikeys/k1", "apigateway:GET")
    + calls(MACHINE, "states:ListExecutions")
    + calls(EXECUTION, "states:StopExecution")
    + calls(LOG_GROUP, "logs:FilterLogEvents", "logs:StartLiveTail", "logs:DeleteLogGroup")
    + calls(f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:*", "logs:DescribeLogGroups")
)


def policy() -> dict[str, Any]:
    return dict(json.loads(POLICY.read_text(encoding="utf-8")))


def listed(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value


def arn_matches(pattern: str, arn: str) -> bool:
    """IAM's match of a Resource element: * any run of characters (across ':' and '/' too), ? one."""
    return re.fullmatch(re.escape(pattern).replace(r"\*", ".*").replace(r"\?", "."), arn) is not None


def allowed(document: dict[str, Any], action: str, resource: str) -> bool:
    """Whether some Allow statement names the action (case-insensitively, with wildcards) and the resource."""
    return any(
        statement["Effect"] == "Allow"
        and any(fnmatchcase(action.lower(), pattern.lower()) for pattern in listed(statement["Action"]))
        and any(arn_matches(pattern, resource) for pattern in listed(statement["Resource"]))
        for statement in document["Statement"]
    )


def test_allowed_matches_as_iam_does() -> None:
    document = {
        "Statement": [
            {"Effect": "Allow", "Action": "lambda:Get*", "Resource": "arn:aws:lambda:*:*:function:fair-forge-*"},
            {"Effect": "Deny", "Action": "s3:*", "Resource": "*"},
        ]
    }
    assert allowed(document, "lambda:GetFunction", FUNCTION)
    assert allowed(document, "Lambda:getfunction", FUNCTION)  # actions are case-insensitive
    assert not allowed(document, "lambda:GetFunction", FUNCTION.replace("fair-forge", "other"))
    assert not allowed(document, "lambda:DeleteFunction", FUNCTION)
    assert not allowed(document, "s3:GetObject", JOBS_BUCKET)  # a Deny grants nothing


def test_the_policy_covers_every_resource_type_of_the_template() -> None:
    types = {resource["Type"] for resource in template()["Resources"].values()}
    unknown = types - set(NEEDS)
    assert not unknown, f"template.yaml creates {sorted(unknown)}: add what CloudFormation calls for them to NEEDS"
    document = policy()
    missing = [
        f"{kind}: {action} on {resource}"
        for kind in sorted(types)
        for action, resource in NEEDS[kind]
        if not allowed(document, action, resource)
    ]
    assert not missing, "docs/deploy-policy.json does not allow:\n" + "\n".join(missing)


def test_the_policy_covers_what_the_scripts_call() -> None:
    document = policy()
    missing = [f"{action} on {resource}" for action, resource in SCRIPTS if not allowed(document, action, resource)]
    assert not missing, "docs/deploy-policy.json does not allow:\n" + "\n".join(missing)


def test_the_policy_stays_within_the_fair_forge_names() -> None:
    document = policy()
    assert not allowed(document, "lambda:DeleteFunction", f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:payments")
    assert not allowed(document, "iam:PassRole", f"arn:aws:iam::{ACCOUNT}:role/admin")
    assert not allowed(document, "s3:DeleteObject", "arn:aws:s3:::company-data/x")
    assert not allowed(document, "cloudformation:DeleteStack", STACK.replace("fair-forge-agentic", "prod-network"))
    for statement in document["Statement"]:
        assert statement["Effect"] == "Allow"
        assert all(action != "*" and not action.endswith(":*") for action in listed(statement["Action"]))


def trusted_services(body: dict[str, Any]) -> set[str]:
    return {
        service
        for resource in body["Resources"].values()
        if resource["Type"] == "AWS::IAM::Role"
        for statement in resource["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        for service in listed(statement["Principal"]["Service"])
    }


def managed_policy_arns(value: Any) -> set[str]:
    """Every AWS managed policy ARN in a ManagedPolicyArns value, through its Fn::If branches."""
    if isinstance(value, dict) and "Fn::Sub" in value:
        return {value["Fn::Sub"].replace("${AWS::Partition}", "aws")}
    if isinstance(value, dict) and "Fn::If" in value:
        return managed_policy_arns(value["Fn::If"][1]) | managed_policy_arns(value["Fn::If"][2])
    if isinstance(value, list):
        return {arn for item in value for arn in managed_policy_arns(item)}
    return set()


def test_pass_role_and_managed_policies_are_the_templates_own() -> None:
    """iam:PassRole only to the services the template's roles trust; only the managed policies it attaches."""
    body = template()
    statements = {statement["Sid"]: statement for statement in policy()["Statement"]}
    passed_to = statements["IamPassRole"]["Condition"]["StringEquals"]["iam:PassedToService"]
    assert (
        set(passed_to)
        == trusted_services(body)
        == {
            "lambda.amazonaws.com",
            "states.amazonaws.com",
            "apigateway.amazonaws.com",
        }
    )
    attached = {
        arn
        for resource in body["Resources"].values()
        if resource["Type"] == "AWS::IAM::Role"
        for arn in managed_policy_arns(resource["Properties"].get("ManagedPolicyArns"))
    }
    assert len(attached) == 3
    assert set(statements["IamAwsManagedPolicies"]["Condition"]["ArnLike"]["iam:PolicyARN"]) == attached
    assert set(listed(statements["IamAwsManagedPolicies"]["Action"])) == {
        "iam:AttachRolePolicy",
        "iam:DetachRolePolicy",
    }


def test_the_policy_is_a_managed_policy_iam_accepts() -> None:
    text = POLICY.read_text(encoding="utf-8")
    document = json.loads(text)
    assert document["Version"] == "2012-10-17"
    sids = [statement["Sid"] for statement in document["Statement"]]
    assert len(sids) == len(set(sids)) and all(re.fullmatch(r"[A-Za-z0-9]+", sid) for sid in sids)
    assert len(re.sub(r"\s", "", text)) <= MANAGED_POLICY_MAX_CHARS


def test_deploy_md_links_the_policy() -> None:
    page = (ROOT / "docs" / "how-to" / "deploy.md").read_text(encoding="utf-8")
    assert "](../deploy-policy.json)" in page
