#!/usr/bin/env bash
# Ships new code: rebuilds the image, pushes a new tag and points the deployed function at it; or, with
# --image-tag, points it at an image already in ECR (what rollback.sh does).
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/update.sh <module> <region> [--image-tag TAG]

Rebuilds the Lambda image of a deployed fair-forge-<module>, pushes it under a new immutable tag, points
the functions at it (the API function and the jobs' worker, reduce and attempts), waits until the update has
finished, and points the API's stage at a new deployment of the API as the stack defines it. Only the
image changes; every other setting of the stack stays as it is (to change template.yaml, the state
machine's definition or a parameter, run scripts/deploy.sh again).

  scripts/update.sh agentic us-east-1
  scripts/update.sh agentic us-east-1 --image-tag 20250101T120000Z-1a2b3c4d5e6f

Options:
  --image-tag TAG   build nothing: point the functions at the image TAG that the ECR repository
                    fair-forge-<module> already holds (an earlier deployment's; scripts/rollback.sh
                    picks one for you). Docker is not needed.
  -h, --help        this help

Environment:
  AWS_ENDPOINT_URL   send every AWS call to this endpoint (a local emulator)
  DOCKER             the docker command (default: docker)
  IMAGE_TAG          the tag to push the new image under (default: <UTC time>-<git sha>); not with --image-tag
  AWS_PROFILE etc.   the usual AWS CLI configuration
EOF
}

# shellcheck source=scripts/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

DEPLOY_TAG=""
POSITIONAL=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --image-tag) [[ $# -ge 2 && -n "$2" ]] || die "--image-tag needs a tag"; DEPLOY_TAG="$2"; shift 2 ;;
    --image-tag=*) DEPLOY_TAG="${1#*=}"; [[ -n "$DEPLOY_TAG" ]] || die "--image-tag needs a tag"; shift ;;
    -*) usage >&2; die "unknown option: $1" ;;
    *) POSITIONAL+=("$1"); shift ;;
  esac
done
set_target ${POSITIONAL[@]+"${POSITIONAL[@]}"}
[[ -z "$DEPLOY_TAG" ]] || validate_image_tag "$DEPLOY_TAG"
[[ -z "$DEPLOY_TAG" || -z "${IMAGE_TAG:-}" ]] ||
  die "IMAGE_TAG names a new image to build, --image-tag an existing one: give one of them"

require_aws_cli
[[ -n "$DEPLOY_TAG" ]] || require_docker
require_aws_credentials

status="$(stack_status)"
case "$status" in
  "") die "there is no stack $STACK in $REGION: deploy it first with scripts/deploy.sh $MODULE $REGION" ;;
  CREATE_COMPLETE | UPDATE_COMPLETE | UPDATE_ROLLBACK_COMPLETE) ;;
  *) die "stack $STACK is $status; it must be CREATE_COMPLETE or UPDATE_COMPLETE to be updated" ;;
esac
REPO_URI="$(repository_uri)"
[[ -n "$REPO_URI" ]] || die "ECR repository $REPOSITORY is missing: run scripts/deploy.sh $MODULE $REGION"

# Build for the architecture the function was deployed with: an arm64 image cannot run on x86_64.
ARCH="$(stack_parameter Architecture)"
ARCH="${ARCH:-x86_64}" # (Lambda's default, for a stack without the parameter)
OLD_IMAGE="$(aws_ lambda get-function --function-name "$FUNCTION" --query Code.ImageUri --output text)"

if [[ -n "$DEPLOY_TAG" ]]; then
  # Lambda can only run an image the registry lists (and the lifecycle rule keeps the newest 10).
  if ! out="$(aws_ ecr describe-images --repository-name "$REPOSITORY" --image-ids "imageTag=$DEPLOY_TAG" \
    --query 'imageDetails[0].imageDigest' --output text 2>&1)"; then
    [[ "$out" == *ImageNotFound* ]] || die "could not read ECR repository $REPOSITORY: $out"
    die "ECR repository $REPOSITORY has no image tagged $DEPLOY_TAG (it keeps the newest 10); list them: $(aws_hint) ecr describe-images --repository-name $REPOSITORY --query 'imageDetails[].[imagePushedAt, imageTags[0]]' --output text"
  fi
  IMAGE_URI="${REPO_URI}:${DEPLOY_TAG}"
  [[ "$IMAGE_URI" != "$OLD_IMAGE" ]] || die "$FUNCTION already runs $IMAGE_URI: nothing to do"
  info "ECR has $IMAGE_URI ($out); nothing is built"
else
  build_and_push "$REPO_URI" "$(new_image_tag)" "$ARCH"
fi

# The image is switched through the stack, not with `lambda update-function-code`: the stack stays the one
# record of what is deployed (no drift), and CloudFormation rolls back by itself if the new image fails.
# The stack's own template is reused, and `deploy` keeps every parameter but ImageUri at its value, so
# nothing else changes (local edits of template.yaml are deploy.sh's business).
DEPLOYED_TEMPLATE="$(mktemp "${TMPDIR:-/tmp}/fair-forge-template.XXXXXX")"
trap 'rm -f "$DEPLOYED_TEMPLATE"' EXIT
aws_ cloudformation get-template --stack-name "$STACK" --query TemplateBody --output text >"$DEPLOYED_TEMPLATE"

info "Pointing $FUNCTION at $IMAGE_URI"
if ! aws_ cloudformation deploy --stack-name "$STACK" --template-file "$DEPLOYED_TEMPLATE" \
  --capabilities CAPABILITY_IAM --parameter-overrides "ImageUri=$IMAGE_URI"; then
  echo "Recent failures of stack $STACK:" >&2
  stack_failures >&2
  die "the update failed; CloudFormation rolls the function back to $OLD_IMAGE"
fi
# CloudFormation is done once Lambda accepted the code; wait until the functions themselves are ready too.
# (A stack deployed before jobs, or before agent jobs, existed lacks some of them: those are skipped.)
for name in "$FUNCTION" "$WORKER_FUNCTION" "$REDUCE_FUNCTION" "$ATTEMPTS_FUNCTION"; do
  if [[ "$name" != "$FUNCTION" ]] && ! aws_ lambda get-function --function-name "$name" >/dev/null 2>&1; then
    continue
  fi
  aws_ lambda wait function-updated --function-name "$name"
  NOW_IMAGE="$(aws_ lambda get-function --function-name "$name" --query Code.ImageUri --output text)"
  [[ "$NOW_IMAGE" == "$IMAGE_URI" ]] || die "the stack updated but $name runs $NOW_IMAGE, not $IMAGE_URI"
done

# The API itself is unchanged by a new image, but a stack deployed by an older deploy.sh may serve an old
# snapshot of it: one new deployment makes the stage serve what the stack defines.
STAGE="$(stack_parameter StageName)"
redeploy_api "$(rest_api_id)" "${STAGE:-prod}"

echo
echo "Updated $FUNCTION"
echo "  from: $OLD_IMAGE"
echo "  to:   $IMAGE_URI"
