"""Fixtures for running scripts/*.sh for real: AWS CLI v2, moto's server on 127.0.0.1, and a fake docker.

Nothing here can reach AWS: every script gets AWS_ENDPOINT_URL=http://127.0.0.1:<port>, dummy credentials,
a HOME and AWS config files of its own (so no profile of the developer's is ever read), and a region.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-east-1"
MODULE = "agentic"
NAME = f"fair-forge-{MODULE}"
LOG_GROUP = f"/aws/lambda/{NAME}"
# A script's run against moto takes 5-15 s on a quiet machine (deploy.sh the longest); the limit is far above
# ten times that, so that only a hung script, never a slow machine, fails a test.
SCRIPT_TIMEOUT_S = 300.0
# How to get v2 (the one hint, also in docs/how-to/deploy.md "Deploy"): Debian 12's `awscli` package is v2, Ubuntu's is v1.
AWS_CLI_V2_HINT = (
    "install AWS CLI v2 (https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html; "
    "on Debian 12 `apt-get install awscli` is v2, on Ubuntu it is v1)"
)

# The fake docker, written into each test's tmp dir. It records every call (one JSON list per line) and
# behaves like the parts of docker the scripts use: `info` (the daemon is up), `buildx version`, `build`
# (checks the Dockerfile and context exist and remembers the tag), `login --password-stdin` (needs a
# password on stdin, remembers the registry) and `push`, which refuses what was not built or not logged in
# to, like docker, and otherwise does what a registry push amounts to for ECR: it puts the image manifest
# into the repository through ECR's API (moto's here), so the image really exists for Lambda afterwards.
FAKE_DOCKER = r'''#!{python}
"""Fake docker for tests/aws: records its arguments; `push` puts a manifest into (moto's) ECR."""
import hashlib
import json
import os
import sys
from pathlib import Path

STATE = Path(os.environ["FAKE_DOCKER_DIR"])
args = sys.argv[1:]
with (STATE / "calls.jsonl").open("a") as calls:
    calls.write(json.dumps(args) + "\n")


def fail(message):
    print("fake docker: " + message, file=sys.stderr)
    sys.exit(1)


def option(name):
    return args[args.index(name) + 1] if name in args else None


if args == ["info"]:
    if os.environ.get("FAKE_DOCKER_DAEMON_DOWN"):
        fail("Cannot connect to the Docker daemon at unix:///var/run/docker.sock")
    print("Server Version: fake")
elif args == ["buildx", "version"]:
    print("github.com/docker/buildx v0.fake")
elif args[:1] == ["build"] or args[:2] == ["buildx", "build"]:
    dockerfile, context, tag = option("--file"), args[-1], option("--tag")
    if not (dockerfile and Path(dockerfile).is_file() and Path(context, ".dockerignore").is_file() and tag):
        fail("build needs --file <Dockerfile>, --tag and a context with a .dockerignore")
    with (STATE / "built").open("a") as built:
        built.write(tag + "\n")
elif args[:1] == ["login"]:
    password = sys.stdin.read().strip()
    if "--password-stdin" not in args or not password:
        fail("login needs --password-stdin and a password on stdin")
    with (STATE / "logged_in").open("a") as logged_in:
        logged_in.write(args[-1] + "\n")
    print("Login Succeeded")
elif args[:1] == ["push"]:
    image = args[1]
    registry, _, rest = image.partition("/")
    repository, _, tag = rest.rpartition(":")
    built = (STATE / "built").read_text().split() if (STATE / "built").exists() else []
    logged_in = (STATE / "logged_in").read_text().split() if (STATE / "logged_in").exists() else []
    if image not in built:
        fail("An image does not exist locally with the tag: " + image)
    if registry not in logged_in:
        fail("no basic auth credentials")
    if os.environ.get("FAKE_DOCKER_PUSH_LOSES_IMAGE"):  # says it pushed, but the registry never got it
        print(tag + ": digest: sha256:lost size: 0")
        sys.exit(0)
    import boto3

    config = json.dumps({{"architecture": "amd64", "os": "linux", "config": {{"Cmd": ["handler.app.lambda_handler"]}},
                         "tag": tag}}).encode()
    manifest = {{
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {{"mediaType": "application/vnd.docker.container.image.v1+json", "size": len(config),
                    "digest": "sha256:" + hashlib.sha256(config).hexdigest()}},
        "layers": [],
    }}
    region = registry.split(".")[3]  # <account>.dkr.ecr.<region>.amazonaws.com
    ecr = boto3.client("ecr", region_name=region, endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    ecr.put_image(repositoryName=repository, imageTag=tag, imageManifest=json.dumps(manifest))
    print(tag + ": digest: sha256:fake size: 0")
else:
    fail("unsupported command: " + " ".join(args))
'''


def _aws_cli_version(path: str) -> str:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=120, env=_clean_env())
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout + done.stderr).strip()


def _clean_env() -> dict[str, str]:
    """The runner's environment without anything AWS or Python that could leak into the AWS CLI."""
    dropped = ("AWS_", "PYTHON", "VIRTUAL_ENV", "MOTO_", "FAKE_DOCKER")
    return {key: value for key, value in os.environ.items() if not key.startswith(dropped)}


def aws_cli_candidates(path: str) -> list[str]:
    """Every `aws` on `path` (a PATH value), in order, then the usual install places; each file once."""
    found = [str(Path(directory, "aws")) for directory in path.split(os.pathsep) if directory]
    found += ["/usr/local/bin/aws", "/usr/bin/aws"]
    return list(dict.fromkeys(c for c in found if Path(c).is_file() and os.access(c, os.X_OK)))


def find_aws_cli_v2(candidates: list[str]) -> tuple[Path | None, str]:
    """The first candidate that is AWS CLI v2, or None and a reason naming every candidate and its version.

    A v1 earlier on PATH (a pyenv shim, pip's `awscli`) does not hide a v2 later on it or in /usr/bin: the
    tests put the v2 they found first on the scripts' PATH.
    """
    seen: list[str] = []
    for candidate in candidates:
        version = _aws_cli_version(candidate)
        if version.startswith("aws-cli/2."):
            return Path(candidate), ""
        seen.append(f"{candidate} is {version.split(' ')[0] or 'not runnable'}")
    found = "; ".join(seen) if seen else "no aws on PATH or in /usr/local/bin, /usr/bin"
    return None, (
        f"AWS CLI v2 not found ({found}). tests/aws runs scripts/*.sh with it against moto: "
        f"{AWS_CLI_V2_HINT}, as .ci/run does."
    )


@pytest.fixture(scope="session")
def aws_cli_v2() -> Path:
    """An AWS CLI v2 executable. Missing: a failure in CI (CI=true), where .ci/run installs it; else a skip."""
    found, message = find_aws_cli_v2(aws_cli_candidates(os.environ.get("PATH", "")))
    if found is not None:
        return found
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def moto_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """moto's server on 127.0.0.1, for the whole session (each test starts from a reset).

    It binds a port of the system's choosing (`-p 0`) and its log names it: a port picked here and
    bound by moto later could be taken in between (by another pytest-xdist worker's moto), and this
    session would then talk to that one."""
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    env = _clean_env()
    # Lambda's CreateFunction must find the image in moto's ECR, as AWS's must: no stubbed ImageUri.
    env["MOTO_LAMBDA_STUB_ECR"] = "false"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        deadline = time.monotonic() + 30
        while not (running := re.search(r"Running on (http://127\.0\.0\.1:[1-9]\d*)", log.read_text())):
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail("moto's server did not start:\n" + log.read_text(), pytrace=False)
            time.sleep(0.2)
        url = running.group(1)
        while True:
            try:
                with urllib.request.urlopen(url + "/moto-api/", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("moto's server did not start:\n" + log.read_text(), pytrace=False)
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture
def moto(moto_url: str) -> str:
    """A moto with nothing in it."""
    request = urllib.request.Request(moto_url + "/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass
    return moto_url


@dataclass
class FakeDocker:
    path: Path
    state: Path

    def calls(self) -> list[list[str]]:
        log = self.state / "calls.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def pushed(self) -> list[str]:
        return [call[1] for call in self.calls() if call[:1] == ["push"]]


@pytest.fixture
def fake_docker(tmp_path: Path) -> FakeDocker:
    state = tmp_path / "docker-state"
    state.mkdir()
    path = tmp_path / "fake-bin" / "docker"
    path.parent.mkdir()
    path.write_text(FAKE_DOCKER.format(python=sys.executable))
    path.chmod(0o755)
    return FakeDocker(path=path, state=state)


@dataclass
class Scripts:
    """Runs scripts/<name>.sh the way a user does, with the test's environment (from a copy of the project
    when `root` is given: a test that edits template.yaml)."""

    env: dict[str, str]
    root: Path = ROOT

    def run(
        self, name: str, *args: str, stdin: str = "", env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.root / "scripts" / f"{name}.sh"), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=SCRIPT_TIMEOUT_S,
            env={**self.env, **(env or {})},
            cwd=self.root,
        )

    def ok(self, name: str, *args: str, stdin: str = "", env: Mapping[str, str] | None = None) -> str:
        """Runs it and insists on success; returns stdout and stderr together."""
        done = self.run(name, *args, stdin=stdin, env=env)
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{name}.sh {' '.join(args)} exited {done.returncode}:\n{output}"
        return output

    def follow(self, name: str, *args: str) -> subprocess.Popen[str]:
        """Starts it in its own process group (so that the AWS CLI it runs can be stopped with it)."""
        return subprocess.Popen(
            [str(self.root / "scripts" / f"{name}.sh"), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=self.root,
            start_new_session=True,
        )


def stop(process: subprocess.Popen[str]) -> None:
    """Ends a process started by Scripts.follow and everything it started."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def script_env(tmp_path: Path, aws_cli: Path, endpoint: str, docker: FakeDocker) -> dict[str, str]:
    """What a user's shell would hold, pointed at moto: the CLI first on PATH, dummy credentials."""
    bin_dir = tmp_path / "aws-bin"
    bin_dir.mkdir(exist_ok=True)
    link = bin_dir / "aws"
    if not link.exists():
        link.symlink_to(aws_cli)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = _clean_env()
    env.update(
        {
            "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(home),
            "AWS_CONFIG_FILE": str(home / "aws-config-absent"),
            "AWS_SHARED_CREDENTIALS_FILE": str(home / "aws-credentials-absent"),
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_ENDPOINT_URL": endpoint,
            "DOCKER": str(docker.path),
            "FAKE_DOCKER_DIR": str(docker.state),
        }
    )
    return env


@pytest.fixture
def scripts(tmp_path: Path, aws_cli_v2: Path, moto: str, fake_docker: FakeDocker) -> Scripts:
    return Scripts(env=script_env(tmp_path, aws_cli_v2, moto, fake_docker))


def aws(moto_url: str, service: str) -> Any:
    """A boto3 client on moto, for the tests' own look at what the scripts did."""
    return boto3.client(
        service,
        region_name=REGION,
        endpoint_url=moto_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
