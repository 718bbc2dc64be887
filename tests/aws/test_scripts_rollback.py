"""The operator's way back and options (issue #33), against moto with the real AWS CLI:
`rollback.sh` and `update.sh --image-tag`, and a deploy with a customer KMS key, X-Ray
tracing and the workers' dead-letter queue. A file of its own, apart from `test_scripts.py`,
so that `--dist loadfile` runs these long tests (each several scripts against moto) on
another worker than the deploy-update-cleanup cycle."""

from __future__ import annotations

import pytest

from tests.aws.conftest import MODULE, NAME, REGION, FakeDocker, Scripts, aws
from tests.aws.test_scripts import REDUCE, WORKER, deployed_jobs, ecr_tags, policy_document, stack_exists

# Several scripts against moto a test: the rollback test took 240 s beside another worker's deploys
# (about 120 s quiet); the limit stays above ten times that.
pytestmark = [pytest.mark.aws, pytest.mark.timeout(2400)]


def images_of_functions(moto: str) -> set[str]:
    """The images the API function, the worker and the reduce run (one, when they agree)."""
    return {
        str(aws(moto, "lambda").get_function(FunctionName=name)["Code"]["ImageUri"]) for name in (NAME, WORKER, REDUCE)
    }


def test_rollback_and_update_to_a_tag(scripts: Scripts, moto: str, fake_docker: FakeDocker) -> None:
    """Three images (deploy, then update twice); rollback steps back one image at a time by push time, --to
    picks one, and neither builds anything. The tags are named against their order (zz- pushed first, aa-
    second), so that an order by name instead of by push time would fail here."""
    scripts.ok("deploy", MODULE, REGION, env={"IMAGE_TAG": "zz-first"})
    scripts.ok("update", MODULE, REGION, env={"IMAGE_TAG": "aa-second"})
    scripts.ok("update", MODULE, REGION, env={"IMAGE_TAG": "mm-third"})
    first, second, third = fake_docker.pushed()
    assert [image.rpartition(":")[2] for image in (first, second, third)] == ["zz-first", "aa-second", "mm-third"]
    assert images_of_functions(moto) == {third}
    built = len(fake_docker.calls())

    out = scripts.ok("rollback", MODULE, REGION)
    assert images_of_functions(moto) == {second}
    assert f"from: {third}" in out and f"to:   {second}" in out
    out = scripts.ok("rollback", MODULE, REGION)  # again: one more step back, to the first image
    assert images_of_functions(moto) == {first}
    assert f"to:   {first}" in out

    # Nothing older: said, and nothing changes.
    done = scripts.run("rollback", MODULE, REGION)
    assert done.returncode != 0
    assert "runs the oldest image" in done.stderr and "nothing to roll back to" in done.stderr
    assert images_of_functions(moto) == {first}

    # --to a given tag (here forward again), and update.sh --image-tag, which rollback.sh runs.
    scripts.ok("rollback", MODULE, REGION, "--to", "mm-third")
    assert images_of_functions(moto) == {third}
    scripts.ok("update", MODULE, REGION, "--image-tag", "aa-second")
    assert images_of_functions(moto) == {second}
    assert len(fake_docker.calls()) == built  # no build, no login, no push: no docker at all
    assert ecr_tags(moto) == {"zz-first", "aa-second", "mm-third"}

    # A tag that ECR does not hold, the image already running, a tag that is no tag: refused, nothing changes.
    done = scripts.run("rollback", MODULE, REGION, "--to", "never-pushed")
    assert done.returncode != 0
    assert f"ECR repository {NAME} has no image tagged never-pushed" in done.stderr
    done = scripts.run("update", MODULE, REGION, "--image-tag", "aa-second")
    assert done.returncode != 0 and "already runs" in done.stderr
    done = scripts.run("rollback", MODULE, REGION, "--to", "x'; rm -rf /")
    assert done.returncode != 0 and "is not an image tag" in done.stderr
    done = scripts.run("update", MODULE, REGION, "--image-tag", "zz-first", env={"IMAGE_TAG": "new"})
    assert done.returncode != 0 and "give one of them" in done.stderr
    assert images_of_functions(moto) == {second}
    assert len(fake_docker.calls()) == built


def test_deploy_with_a_customer_key_tracing_and_a_dead_letter_queue(scripts: Scripts, moto: str) -> None:
    """The operator's options, on: the stack deploys, and what moto's emulator keeps of them is as asked. (It
    drops the log groups' key, Lambda's tracing, key and dead-letter target, DynamoDB's encryption and the roles'
    managed policies: cfn-lint and checkov read those in the template.)"""
    key = aws(moto, "kms").create_key(Description="the operator's key")["KeyMetadata"]["Arn"]
    scripts.ok(
        "deploy",
        MODULE,
        REGION,
        "--param",
        f"KmsKeyArn={key}",
        "--param",
        "Tracing=Active",
        "--param",
        "WorkerDeadLetterQueue=true",
    )
    parameters = {
        p["ParameterKey"]: p["ParameterValue"]
        for p in aws(moto, "cloudformation").describe_stacks(StackName=NAME)["Stacks"][0]["Parameters"]
    }
    assert (parameters["KmsKeyArn"], parameters["Tracing"], parameters["WorkerDeadLetterQueue"]) == (
        key,
        "Active",
        "true",
    )
    # The jobs bucket and the uploaded state machine definition are encrypted with the operator's key.
    jobs = deployed_jobs(moto)
    [rule] = aws(moto, "s3").get_bucket_encryption(Bucket=jobs.bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    assert rule["ApplyServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key}
    definition = aws(moto, "s3").head_object(
        Bucket=parameters["StateMachineDefinitionBucket"], Key=parameters["StateMachineDefinitionKey"]
    )
    assert (definition["ServerSideEncryption"], definition["SSEKMSKeyId"]) == ("aws:kms", key)
    # The dead-letter queue exists, and the worker and the reduce may send to it.
    [queue_url] = aws(moto, "sqs").list_queues(QueueNamePrefix=f"{NAME}-DeadLetterQueue")["QueueUrls"]
    queue_arn = aws(moto, "sqs").get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    iam = aws(moto, "iam")
    for name in (WORKER, REDUCE):
        role = aws(moto, "lambda").get_function(FunctionName=name)["Configuration"]["Role"].rsplit("/", 1)[-1]
        documents = [
            policy_document(iam.get_role_policy(RoleName=role, PolicyName=policy)["PolicyDocument"])
            for policy in iam.list_role_policies(RoleName=role)["PolicyNames"]
        ]
        sends = [s["Resource"] for d in documents for s in d["Statement"] if s["Action"] == "sqs:SendMessage"]
        assert sends == [queue_arn], name
        uses_key = [s["Resource"] for d in documents for s in d["Statement"] if "kms:GenerateDataKey" in s["Action"]]
        assert uses_key == [key], name

    # Deployed again without the parameters, they keep their values (the definition keeps the key).
    scripts.ok("deploy", MODULE, REGION)
    parameters = {
        p["ParameterKey"]: p["ParameterValue"]
        for p in aws(moto, "cloudformation").describe_stacks(StackName=NAME)["Stacks"][0]["Parameters"]
    }
    definition = aws(moto, "s3").head_object(
        Bucket=parameters["StateMachineDefinitionBucket"], Key=parameters["StateMachineDefinitionKey"]
    )
    assert definition["SSEKMSKeyId"] == key
    scripts.ok("cleanup", MODULE, REGION, "--yes")
    assert not stack_exists(moto)


def test_rollback_before_deploy_says_to_deploy(scripts: Scripts) -> None:
    done = scripts.run("rollback", MODULE, REGION)
    assert done.returncode != 0
    assert f"deploy it first with scripts/deploy.sh {MODULE} {REGION}" in done.stderr


# `aws logs tail --follow` starts in about 2 s and polls every 5 s: an event shows within about 7 s on a
# quiet machine; the wait allows far more than ten times that.
