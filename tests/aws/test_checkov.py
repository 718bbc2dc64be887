"""checkov on template.yaml: no check fails, and every check the template skips says why, beside it.

checkov pins many packages of its own, so it lives in a virtual environment of its own, `.venv-checkov`
(`make checkov`; .ci/run makes it before `make test`). When it is missing the first test here makes it; when
that fails (no network to PyPI) the tests are skipped, except in CI, where they fail. It runs offline:
--skip-download and no update check, so nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fair_forge_testing.cloudformation import _CfnLoader as CfnLoader  # the loader template() reads with
from fair_forge_testing.cloudformation import template

ROOT = Path(__file__).resolve().parents[2]
CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"
# Installing checkov takes about a minute, one run about 15 s on a quiet machine: far below these.
INSTALL_TIMEOUT_S = 1500
RUN_TIMEOUT_S = 600
pytestmark = pytest.mark.timeout(INSTALL_TIMEOUT_S + 3 * RUN_TIMEOUT_S)
# A reason is a sentence, not a placeholder such as "n/a" or "ok".
MIN_REASON_CHARS = 40


@pytest.fixture(scope="module")
def checkov() -> Path:
    if not CHECKOV.exists():
        done = subprocess.run(
            ["make", "-s", "checkov"], cwd=ROOT, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S
        )
        if done.returncode != 0 or not CHECKOV.exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            message = (
                "checkov could not be installed into .venv-checkov (`make checkov`, which needs PyPI): "
                + " / ".join(tail)
            )
            if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
                pytest.fail(message, pytrace=False)
            pytest.skip(message)
    return CHECKOV


def scan(checkov: Path, file: Path) -> dict[str, Any]:
    """checkov's JSON report on one CloudFormation file, offline."""
    env = {**os.environ, "CKV_SKIP_PACKAGE_UPDATE_CHECK": "true", "BC_SKIP_MAPPING": "TRUE"}
    done = subprocess.run(
        [str(checkov), "-f", str(file), "--framework", "cloudformation", "--skip-download", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=env,
        cwd=file.parent,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: a check failed; anything else: a crash
    report = json.loads(done.stdout)
    assert report["check_type"] == "cloudformation"
    assert report["summary"]["parsing_errors"] == 0
    return dict(report)


def declared_skips(body: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(resource, check id) -> the reason, from each resource's `Metadata: checkov: skip:`."""
    return {
        (name, skip["id"]): str(skip.get("comment", ""))
        for name, resource in body["Resources"].items()
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
    }


def resource_name(check: dict[str, Any]) -> str:
    return str(check["resource"]).rpartition(".")[2]  # "AWS::S3::Bucket.JobsBucket" -> "JobsBucket"


def test_checkov_passes_with_only_reasoned_skips(checkov: Path) -> None:
    report = scan(checkov, ROOT / "template.yaml")
    failed = [f"{c['check_id']} {c['resource']}: {c['check_name']}" for c in report["results"]["failed_checks"]]
    assert not failed, "checkov checks that fail without a reasoned skip in template.yaml:\n" + "\n".join(failed)
    assert report["summary"]["passed"] >= 100  # the template was scanned, not an empty file
    skips = declared_skips(template())
    applied = {(resource_name(c), c["check_id"]) for c in report["results"]["skipped_checks"]}
    assert applied == set(skips)  # every skip checkov applied is one the template declares, and the reverse


def test_every_skip_gives_its_reason() -> None:
    skips = declared_skips(template())
    assert skips  # (the checks the template cannot meet: docs/how-to/deploy.md lists them)
    for (resource, check), reason in skips.items():
        assert re.fullmatch(r"CKV_AWS_\d+", check), f"{resource}: {check!r} is not a checkov check id"
        assert len(reason.strip()) >= MIN_REASON_CHARS, f"{resource} skips {check} without a reason"


def test_a_failing_check_without_a_skip_is_reported(checkov: Path, tmp_path: Path) -> None:
    """The scan above can fail: the same template with the stage's skips taken out fails their checks."""
    body = yaml.load((ROOT / "template.yaml").read_text(), Loader=CfnLoader)
    stage_skips = {check for resource, check in declared_skips(body) if resource == "Stage"}
    assert stage_skips
    del body["Resources"]["Stage"]["Metadata"]
    copy = tmp_path / "template.json"  # JSON: the intrinsic functions in their long form, which checkov reads too
    copy.write_text(json.dumps(body))
    report = scan(checkov, copy)
    failed = {(resource_name(c), c["check_id"]) for c in report["results"]["failed_checks"]}
    assert failed == {("Stage", check) for check in stage_skips}
