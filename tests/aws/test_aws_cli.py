"""How tests/aws finds the AWS CLI v2 (conftest.find_aws_cli_v2): past a v1 earlier on PATH, and a skip whose
reason names every `aws` found, its version, and how to install v2."""

from __future__ import annotations

import os
from pathlib import Path

from tests.aws.conftest import AWS_CLI_V2_HINT, aws_cli_candidates, find_aws_cli_v2

V1 = "aws-cli/1.45.11 Python/3.11.7 Linux/6.1 botocore/1.43.11"
V2 = "aws-cli/2.9.19 Python/3.11.2 Linux/6.1 source/x86_64.debian.12 prompt/off"


def fake_aws(directory: Path, version: str) -> str:
    """An `aws` that answers `--version` as the given release does (v1 writes it to stderr, v2 to stdout)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "aws"
    stream = ">&2" if version.startswith("aws-cli/1.") else ""
    path.write_text(f'#!/bin/sh\n[ "$1" = --version ] && echo "{version}" {stream}\n')
    path.chmod(0o755)
    return str(path)


def test_a_v1_first_on_path_does_not_hide_a_v2_after_it(tmp_path: Path) -> None:
    v1 = fake_aws(tmp_path / "shims", V1)  # e.g. pyenv's shim, first on PATH
    v2 = fake_aws(tmp_path / "bin", V2)
    path = os.pathsep.join([str(tmp_path / "shims"), str(tmp_path / "empty"), str(tmp_path / "bin")])
    candidates = aws_cli_candidates(path)
    assert candidates[:2] == [v1, v2]
    assert find_aws_cli_v2(candidates) == (Path(v2), "")


def test_only_v1_is_a_skip_that_names_it_and_says_how_to_get_v2(tmp_path: Path) -> None:
    v1 = fake_aws(tmp_path / "shims", V1)
    broken = tmp_path / "other" / "aws"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    found, reason = find_aws_cli_v2([v1, str(broken)])
    assert found is None
    assert f"{v1} is aws-cli/1.45.11" in reason
    assert f"{broken} is not runnable" in reason
    assert AWS_CLI_V2_HINT in reason
    assert "v2" in AWS_CLI_V2_HINT and "getting-started-install" in AWS_CLI_V2_HINT
    assert find_aws_cli_v2([])[1].startswith("AWS CLI v2 not found (no aws on PATH")
