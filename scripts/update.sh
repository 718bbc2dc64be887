#!/usr/bin/env bash
# Ships new code: rebuilds the image, pushes a new tag and points the deployed function at it.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/update.sh <module> <region>

Rebuilds the Lambda image of a deployed fair-forge-<module>, pushes it under a new immutable tag, points
the functions at it (the API function and the jobs' worker and reduce), waits until the update has
finished, and points the API's stage at a new deployment of the API as the stack defines it. Only the image changes; every other setting of the stack stays as it is (to change template.yaml,
the state machine's definition or a parameter, run scripts/deploy.sh again).

  scripts/update.sh agentic us-east-1

Options:
  -h, --help   this help

Environment:
  AWS_ENDPOINT_URL   send every AWS call to this endpoint (a local emulator)
  DOCKER             the docker command (default: docker)
  IMAGE_TAG          the image tag to push (default: <UTC time>-<git sha>)
  AWS_PROFILE etc.   the usual AWS CLI configuration
EOF
}

# shellcheck source=scripts/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

POSITIONAL=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    -*) usage >&2; die "unknown option: $1" ;;
    *) POSITIONAL+=("$1"); shift ;;
  esac
done
set_target ${POSITIONAL[@]+"${POSITIONAL[@]}"}

require_aws_cli
require_docker
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

build_and_push "$REPO_URI" "$(new_image_tag)" "$ARCH"

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
# (A stack deployed before jobs existed has no worker and reduce: those are skipped.)
for name in "$FUNCTION" "$WORKER_FUNCTION" "$REDUCE_FUNCTION"; do
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
