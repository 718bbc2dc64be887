# shellcheck shell=bash
# Shared by deploy.sh, update.sh, rollback.sh, cleanup.sh and logs.sh; sourced, never run on its own.
#
# Written for bash 3.2 too (macOS's /bin/bash): no mapfile, no associative arrays, and empty arrays are
# expanded as ${a[@]+"${a[@]}"} because bash 3.2 calls "${a[@]}" of an empty array unbound under `set -u`.
#
# Environment honoured by every script:
#   AWS_ENDPOINT_URL  send every AWS call there (a local emulator such as moto or LocalStack). Passed as
#                     --endpoint-url, because AWS CLI releases before 2.13 ignore the variable.
#   DOCKER            the docker command, e.g. "podman" or "sudo docker" (default: docker).
#   AWS_PROFILE etc.  the usual AWS CLI configuration.

PROJECT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# AWS CLI v2 pipes long output through a pager; a script must never stop and wait in `less`.
export AWS_PAGER=""

# DOCKER may hold a command with arguments ("sudo docker"): split it into words once.
read -r -a DOCKER_CMD <<<"${DOCKER:-docker}"

die() {
  echo "error: $*" >&2
  exit 1
}

# Progress goes to stderr, so that stdout carries only the result (logs.sh's log events, for one).
info() {
  echo "==> $*" >&2
}

# Module names end up in an ECR repository, a Lambda function, a log group and a stack name: keep to the
# characters that all of them accept.
validate_module() {
  [[ "$1" =~ ^[a-z0-9][a-z0-9-]{0,39}$ ]] ||
    die "module name '$1' must be 1-40 characters of lowercase letters, digits and '-', e.g. agentic"
}

validate_region() {
  [[ "$1" =~ ^[a-z]{2}(-[a-z]+)+-[0-9]+$ ]] || die "'$1' does not look like an AWS region, e.g. us-east-1"
}

# Every name is derived from the module, so the scripts always agree on what they act on.
# (SC2034: the variables are used by the scripts that source this file.)
# shellcheck disable=SC2034
set_names() {
  MODULE="$1"
  REGION="$2"
  NAME="fair-forge-${MODULE}"
  STACK="$NAME"
  REPOSITORY="$NAME"
  FUNCTION="$NAME"
  LOG_GROUP="/aws/lambda/${NAME}"
  # The asynchronous jobs: three more functions of the same image, their log groups, the state machine.
  WORKER_FUNCTION="${NAME}-worker"
  REDUCE_FUNCTION="${NAME}-reduce"
  ATTEMPTS_FUNCTION="${NAME}-attempts"
  STATE_MACHINE="$NAME"
  # API Gateway's access log (template.yaml's ApiAccessLogGroup).
  ACCESS_LOG_GROUP="/aws/apigateway/${NAME}-access"
  LOG_GROUPS=("$LOG_GROUP" "/aws/lambda/${WORKER_FUNCTION}" "/aws/lambda/${REDUCE_FUNCTION}"
    "/aws/lambda/${ATTEMPTS_FUNCTION}" "$ACCESS_LOG_GROUP")
}

# The bucket that holds what the stack is deployed from (the state machine's definition), one per account
# and region, shared by the modules (each under its own prefix). Needs ACCOUNT_ID (require_aws_credentials).
artifacts_bucket() {
  echo "fair-forge-artifacts-${ACCOUNT_ID}-${REGION}"
}

# SHA-256 of a file, with the tool the system has (GNU coreutils, or macOS's shasum).
file_sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -c1-64
  else
    shasum -a 256 "$1" | cut -c1-64
  fi
}

# Uploads statemachine/evaluation.asl.json to the artifacts bucket (created if missing: private, encrypted)
# under a name made of its SHA-256, so a changed definition is a changed stack parameter. Sets
# DEFINITION_BUCKET and DEFINITION_KEY.
# (Not `aws cloudformation package`: CLI releases before 2.13 send its upload to AWS even with --endpoint-url.)
# Sets DEFINITION_BUCKET and DEFINITION_KEY: where upload_state_machine_definition puts the definition.
state_machine_definition_location() {
  DEFINITION_BUCKET="$(artifacts_bucket)"
  DEFINITION_KEY="${MODULE}/evaluation-$(file_sha256 "$PROJECT_ROOT/statemachine/evaluation.asl.json" | cut -c1-16).asl.json"
}

upload_state_machine_definition() {
  local file="$PROJECT_ROOT/statemachine/evaluation.asl.json" out
  state_machine_definition_location
  if ! out="$(aws_ s3api head-bucket --bucket "$DEFINITION_BUCKET" --expected-bucket-owner "$ACCOUNT_ID" 2>&1)"; then
    [[ "$out" == *404* || "$out" == *"Not Found"* || "$out" == *NoSuchBucket* ]] ||
      die "cannot use S3 bucket $DEFINITION_BUCKET (it may belong to another account): $out"
    info "Creating S3 bucket $DEFINITION_BUCKET for the stack's artifacts"
    if [[ "$REGION" == us-east-1 ]]; then
      aws_ s3api create-bucket --bucket "$DEFINITION_BUCKET" >/dev/null
    else
      aws_ s3api create-bucket --bucket "$DEFINITION_BUCKET" \
        --create-bucket-configuration "LocationConstraint=$REGION" >/dev/null
    fi
    aws_ s3api put-public-access-block --bucket "$DEFINITION_BUCKET" --public-access-block-configuration \
      BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,RestrictPublicBuckets=true
    aws_ s3api put-bucket-encryption --bucket "$DEFINITION_BUCKET" --server-side-encryption-configuration \
      '{"Rules":[{"ApplyServerSideEncryptionByDefault":{"SSEAlgorithm":"AES256"}}]}'
  fi
  # With the stack's KmsKeyArn (DEFINITION_KMS_KEY), the object is encrypted with that key; else with the
  # bucket's default (S3's own keys). The bucket is shared by the modules, so the key is the object's, not the bucket's.
  local sse=()
  if [[ -n "${DEFINITION_KMS_KEY:-}" ]]; then
    sse=(--server-side-encryption aws:kms --ssekms-key-id "$DEFINITION_KMS_KEY")
  fi
  info "Uploading the state machine definition to s3://$DEFINITION_BUCKET/$DEFINITION_KEY"
  aws_ s3api put-object --bucket "$DEFINITION_BUCKET" --key "$DEFINITION_KEY" --body "$file" \
    --content-type application/json --expected-bucket-owner "$ACCOUNT_ID" ${sse[@]+"${sse[@]}"} >/dev/null
}

# template.yaml without its comment lines, into a temporary file; prints the file's path. CloudFormation takes a
# template of at most 51,200 bytes in the request itself (more only from S3, which `cloudformation deploy`
# would upload past AWS_ENDPOINT_URL); the comments are for the reader, not for CloudFormation. (No line of a
# block scalar in template.yaml starts with '#': tests/aws/test_lint.py checks that both parse the same.)
deployable_template() {
  local file
  file="$(mktemp "${TMPDIR:-/tmp}/fair-forge-template.XXXXXX")"
  grep -v -E '^[[:space:]]*#' "$PROJECT_ROOT/template.yaml" >"$file"
  echo "$file"
}

# The AWS CLI with the region and, when set, the emulator endpoint.
aws_() {
  if [[ -n "${AWS_ENDPOINT_URL:-}" ]]; then
    aws --region "$REGION" --endpoint-url "$AWS_ENDPOINT_URL" "$@"
  else
    aws --region "$REGION" "$@"
  fi
}

# The same, as a string a user can paste (for the commands the scripts print).
aws_hint() {
  local hint="aws --region $REGION"
  if [[ -n "${AWS_ENDPOINT_URL:-}" ]]; then
    hint+=" --endpoint-url $AWS_ENDPOINT_URL"
  fi
  echo "$hint"
}

require_aws_cli() {
  command -v aws >/dev/null 2>&1 ||
    die "the AWS CLI is not installed. Install v2: https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html (Debian 12: apt-get install awscli; Ubuntu's package is v1)"
}

# `aws logs tail` exists only in v2: say so instead of failing in the middle. (Only logs.sh asks: the
# other scripts' commands work in v1 too, and each `aws` start costs half a second.)
require_aws_cli_v2() {
  require_aws_cli
  local version
  version="$(aws --version 2>&1)"
  [[ "$version" == aws-cli/2.* ]] || die "this script needs AWS CLI v2 ('aws logs tail'), found: $version"
}

# Credentials, and the account they belong to (said in messages, so nobody deploys to the wrong one).
# shellcheck disable=SC2034
require_aws_credentials() {
  local out
  if ! out="$(aws_ sts get-caller-identity --query Account --output text 2>&1)"; then
    die "no usable AWS credentials for region $REGION (run 'aws configure' or 'aws sso login', or set AWS_PROFILE): $out"
  fi
  ACCOUNT_ID="$out"
}

require_docker() {
  command -v "${DOCKER_CMD[0]}" >/dev/null 2>&1 ||
    die "'${DOCKER_CMD[0]}' not found: install Docker (https://docs.docker.com/get-docker/) or set DOCKER to your docker command"
  "${DOCKER_CMD[@]}" info >/dev/null 2>&1 ||
    die "'${DOCKER_CMD[*]} info' failed: is the Docker daemon running, and may this user use it?"
}

# Prints the stack's status, or nothing when there is no stack (a deleted stack counts as none).
stack_status() {
  local out
  if out="$(aws_ cloudformation describe-stacks --stack-name "$STACK" \
    --query 'Stacks[0].StackStatus' --output text 2>&1)"; then
    [[ "$out" == DELETE_COMPLETE ]] || echo "$out"
  elif [[ "$out" == *"does not exist"* ]]; then
    return 0
  else
    die "could not read stack $STACK: $out"
  fi
}

stack_parameter() {
  local value
  value="$(aws_ cloudformation describe-stacks --stack-name "$STACK" \
    --query "Stacks[0].Parameters[?ParameterKey=='$1'].ParameterValue | [0]" --output text)"
  [[ "$value" == None ]] || echo "$value"
}

# The reason CloudFormation gives for the most recent failures, for error messages.
stack_failures() {
  aws_ cloudformation describe-stack-events --stack-name "$STACK" --max-items 30 \
    --query "StackEvents[?contains(ResourceStatus, 'FAILED')].[LogicalResourceId, ResourceStatus, ResourceStatusReason]" \
    --output text 2>/dev/null | head -n 10 || true
}

# The id of the module's REST API (the stack's RestApiId output; by name where an emulator gives no outputs).
rest_api_id() {
  local id
  id="$(aws_ cloudformation describe-stacks --stack-name "$STACK" \
    --query "Stacks[0].Outputs[?OutputKey=='RestApiId'].OutputValue | [0]" --output text)"
  if [[ -z "$id" || "$id" == None ]]; then
    id="$(aws_ apigateway get-rest-apis --query "items[?name=='$NAME'].id | [0]" --output text)"
  fi
  [[ -n "$id" && "$id" != None ]] || die "stack $STACK has no REST API $NAME"
  echo "$id"
}

# Points the stage at a new deployment of the REST API as the stack has just left it. API Gateway serves a
# snapshot of the API (a deployment), and CloudFormation takes a new one only when the stack's Deployment
# resource is created or replaced, not when a method is added or changed beside it: without this, a route
# added by a stack update (or CORS turned on) would never go live. One deployment per run costs nothing;
# the stage keeps its settings (throttling, access log).
redeploy_api() {
  local api_id="$1" stage="$2" deployment
  deployment="$(aws_ apigateway create-deployment --rest-api-id "$api_id" --stage-name "$stage" \
    --description "$NAME by scripts/$(basename "$0") at $(date -u +%Y-%m-%dT%H:%M:%SZ)" --query id --output text)" ||
    die "the stack is deployed, but the new API deployment for stage $stage failed: run this script again"
  info "Stage $stage of API $api_id serves deployment $deployment"
}

# Prints the repository's URI, or nothing when it does not exist.
repository_uri() {
  local out
  if out="$(aws_ ecr describe-repositories --repository-names "$REPOSITORY" \
    --query 'repositories[0].repositoryUri' --output text 2>&1)"; then
    echo "$out"
  elif [[ "$out" == *RepositoryNotFoundException* ]]; then
    return 0
  else
    die "could not read ECR repository $REPOSITORY: $out"
  fi
}

# A tag is never reused (the repository is IMMUTABLE): UTC time for order, the commit for traceability,
# "-dirty" when the working tree has uncommitted changes. IMAGE_TAG overrides it.
new_image_tag() {
  if [[ -n "${IMAGE_TAG:-}" ]]; then
    echo "$IMAGE_TAG"
    return
  fi
  local stamp sha
  stamp="$(date -u +%Y%m%dT%H%M%SZ)"
  if sha="$(git -C "$PROJECT_ROOT" rev-parse --short=12 HEAD 2>/dev/null)"; then
    if [[ -n "$(git -C "$PROJECT_ROOT" status --porcelain 2>/dev/null)" ]]; then
      sha+="-dirty"
    fi
    echo "${stamp}-${sha}"
  else
    echo "$stamp"
  fi
}

# An ECR tag (letters, digits, '_', '.', '-'; up to 128), which also keeps it out of any shell or query syntax.
validate_image_tag() {
  [[ "$1" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "'$1' is not an image tag (letters, digits, '_', '.' and '-')"
}

# Lambda runs x86_64 or arm64; docker wants the matching platform.
docker_platform() {
  case "$1" in
    x86_64) echo linux/amd64 ;;
    arm64) echo linux/arm64 ;;
    *) die "architecture must be x86_64 or arm64, not '$1'" ;;
  esac
}

# Builds the image for ARCH, pushes it as REPO_URI:TAG and checks that ECR has it. Sets IMAGE_URI.
build_and_push() {
  local repo_uri="$1" tag="$2" arch="$3"
  local platform registry out
  platform="$(docker_platform "$arch")"
  registry="${repo_uri%%/*}"
  IMAGE_URI="${repo_uri}:${tag}"

  # An immutable repository refuses a second push of a tag; say so before a long build.
  if aws_ ecr describe-images --repository-name "$REPOSITORY" --image-ids "imageTag=$tag" >/dev/null 2>&1; then
    die "$IMAGE_URI already exists and tags are immutable: set IMAGE_TAG to a new tag, or wait a second"
  fi

  info "Building $IMAGE_URI for $platform"
  # With buildx (docker's default builder since 23.0), --provenance=false keeps the image a plain
  # single-platform manifest: Lambda rejects the manifest list that a provenance attestation produces.
  if "${DOCKER_CMD[@]}" buildx version >/dev/null 2>&1; then
    "${DOCKER_CMD[@]}" buildx build --platform "$platform" --provenance=false --load \
      --tag "$IMAGE_URI" --file "$PROJECT_ROOT/Dockerfile" "$PROJECT_ROOT"
  else
    "${DOCKER_CMD[@]}" build --platform "$platform" \
      --tag "$IMAGE_URI" --file "$PROJECT_ROOT/Dockerfile" "$PROJECT_ROOT"
  fi

  info "Logging docker in to $registry"
  # The password goes through a pipe, never a command line (where `ps` would show it).
  aws_ ecr get-login-password | "${DOCKER_CMD[@]}" login --username AWS --password-stdin "$registry" >/dev/null

  info "Pushing $IMAGE_URI"
  "${DOCKER_CMD[@]}" push "$IMAGE_URI"

  # Trust ECR, not the push's exit code: Lambda can only use an image that the registry lists.
  if ! out="$(aws_ ecr describe-images --repository-name "$REPOSITORY" --image-ids "imageTag=$tag" \
    --query 'imageDetails[0].imageDigest' --output text 2>&1)"; then
    die "docker push finished but ECR does not list $IMAGE_URI: $out"
  fi
  info "ECR has $IMAGE_URI ($out)"
}

# The <module> <region> every script takes: checked, then the names derived from them.
# (Each script defines `usage`.)
set_target() {
  [[ $# -eq 2 ]] || { usage >&2; die "expected <module> <region>"; }
  validate_module "$1"
  validate_region "$2"
  set_names "$1" "$2"
}
