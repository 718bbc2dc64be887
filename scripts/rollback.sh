#!/usr/bin/env bash
# Points a deployed module back at an earlier image of its ECR repository (update.sh --image-tag does the switch).
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/rollback.sh <module> <region> [--to TAG]

Points the functions of fair-forge-<module> (the API function and the jobs' worker, reduce and attempts) back at an
image that its ECR repository fair-forge-<module> already holds, through the stack, as update.sh does:
nothing is built, and every other setting of the stack stays as it is.

Without --to it takes the image pushed just before the one the API function runs now; run it again to step
further back. The repository keeps the newest 10 images (deploy.sh's lifecycle rule).

  scripts/rollback.sh agentic us-east-1
  scripts/rollback.sh agentic us-east-1 --to 20250101T120000Z-1a2b3c4d5e6f

Options:
  --to TAG     the image to go back (or forward) to, by its tag
  -h, --help   this help

Environment:
  AWS_ENDPOINT_URL   send every AWS call to this endpoint (a local emulator)
  AWS_PROFILE etc.   the usual AWS CLI configuration
EOF
}

# shellcheck source=scripts/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

TO=""
POSITIONAL=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --to) [[ $# -ge 2 && -n "$2" ]] || die "--to needs a tag"; TO="$2"; shift 2 ;;
    --to=*) TO="${1#*=}"; [[ -n "$TO" ]] || die "--to needs a tag"; shift ;;
    -*) usage >&2; die "unknown option: $1" ;;
    *) POSITIONAL+=("$1"); shift ;;
  esac
done
set_target ${POSITIONAL[@]+"${POSITIONAL[@]}"}
[[ -z "$TO" ]] || validate_image_tag "$TO"

require_aws_cli
require_aws_credentials

if [[ -z "$TO" ]]; then
  if ! current="$(aws_ lambda get-function --function-name "$FUNCTION" --query Code.ImageUri --output text 2>&1)"; then
    [[ "$current" == *ResourceNotFoundException* ]] || die "could not read function $FUNCTION: $current"
    die "there is no function $FUNCTION in $REGION: deploy it first with scripts/deploy.sh $MODULE $REGION"
  fi
  [[ "$current" == *:* && "$current" != *@* ]] || die "$FUNCTION runs $current, which names no tag: give --to TAG"
  current_tag="${current##*:}"
  # Every tagged image, oldest first: by the time ECR received it, then by tag (a tie within one second:
  # deploy.sh's tags begin with their UTC time). One "<pushed at> <tag>" line each; TZ=UTC, since the CLI
  # prints times in the local zone, whose offset changes with daylight saving and would upset the order.
  if ! images="$(TZ=UTC aws_ ecr describe-images --repository-name "$REPOSITORY" --filter tagStatus=TAGGED \
    --query 'imageDetails[].[imagePushedAt, imageTags[0]]' --output text 2>&1)"; then
    die "could not list the images of ECR repository $REPOSITORY: $images"
  fi
  ordered="$(LC_ALL=C sort -k1,1 -k2,2 <<<"$images")"
  awk -v tag="$current_tag" '$2 == tag { found = 1 } END { exit !found }' <<<"$ordered" ||
    die "$FUNCTION runs $current, which ECR repository $REPOSITORY no longer lists: give --to TAG"
  before="$(awk -v tag="$current_tag" '$2 == tag { exit } { previous = $2 } END { print previous }' <<<"$ordered")"
  [[ -n "$before" ]] || die "$FUNCTION runs the oldest image ECR repository $REPOSITORY holds ($current_tag): nothing to roll back to"
  TO="$before"
  info "Rolling $FUNCTION back from $current_tag to the image pushed before it, $TO"
fi

unset IMAGE_TAG # (update.sh's tag for a new build, which this is not)
exec "$(dirname "${BASH_SOURCE[0]}")/update.sh" "$MODULE" "$REGION" --image-tag "$TO"
