#!/usr/bin/env bash
# Removes everything deploy.sh created for a module. Safe to run again: what is already gone is skipped.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/cleanup.sh <module> <region> [--yes]

Removes Fair-Forge Agentic's AWS resources for <module>: the CloudFormation stack fair-forge-<module>
(function, role, REST API, API key, usage plan, log group), the ECR repository fair-forge-<module> with
all its images, and the log group /aws/lambda/fair-forge-<module>. Asks first unless --yes is given.
A Secrets Manager secret passed to deploy.sh with --secret-arn is yours and is left alone.

  scripts/cleanup.sh agentic us-east-1

Options:
  -y, --yes    do not ask for confirmation
  -h, --help   this help

Environment:
  AWS_ENDPOINT_URL   send every AWS call to this endpoint (a local emulator)
  AWS_PROFILE etc.   the usual AWS CLI configuration
EOF
}

# shellcheck source=scripts/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

YES=false
POSITIONAL=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    -y | --yes) YES=true; shift ;;
    -*) usage >&2; die "unknown option: $1" ;;
    *) POSITIONAL+=("$1"); shift ;;
  esac
done
[[ ${#POSITIONAL[@]} -eq 2 ]] || { usage >&2; die "expected <module> <region>"; }
validate_module "${POSITIONAL[0]}"
validate_region "${POSITIONAL[1]}"
set_names "${POSITIONAL[0]}" "${POSITIONAL[1]}"

require_aws_cli
require_aws_credentials

if [[ "$YES" != true ]]; then
  echo "This deletes, in account $ACCOUNT_ID, region $REGION:"
  echo "  - CloudFormation stack $STACK (function, role, REST API, API key, usage plan)"
  echo "  - ECR repository $REPOSITORY and every image in it"
  echo "  - log group $LOG_GROUP and every log in it"
  # No answer (no terminal, end of input) is a no.
  answer=""
  read -r -p "Type 'yes' to continue: " answer || true
  if [[ "$answer" != yes && "$answer" != y ]]; then
    echo "Not confirmed: nothing was removed (run with --yes to skip this question)." >&2
    exit 1
  fi
fi

REMOVED=()

status="$(stack_status)"
if [[ -n "$status" ]]; then
  [[ "$status" != *_IN_PROGRESS || "$status" == DELETE_IN_PROGRESS ]] ||
    die "stack $STACK is busy ($status); wait for it to finish and run this again"
  info "Deleting stack $STACK (this takes a minute or two on AWS)"
  aws_ cloudformation delete-stack --stack-name "$STACK"
  if ! aws_ cloudformation wait stack-delete-complete --stack-name "$STACK"; then
    echo "Recent failures of stack $STACK:" >&2
    stack_failures >&2
    die "the stack could not be deleted (see above); fix that and run this again"
  fi
  REMOVED+=("CloudFormation stack $STACK with what it held (function $FUNCTION, its role, API, key, usage plan)")
fi

# CloudFormation deletes the REST API with the stack. This sweep by name catches one that outlived its
# stack anyway: moto's emulator never deletes it, nor does a stack removed by hand with --retain-resources.
# (Each look-up is assigned before it is tested: a failed command inside [[ ]] or a for list would not stop
# the script under set -e, it would just look like "nothing there".)
api_ids="$(aws_ apigateway get-rest-apis --query "items[?name=='$NAME'].id" --output text)"
for api_id in $api_ids; do
  info "Deleting leftover REST API $NAME ($api_id)"
  aws_ apigateway delete-rest-api --rest-api-id "$api_id"
  REMOVED+=("REST API $NAME ($api_id)")
done

repo_uri="$(repository_uri)"
if [[ -n "$repo_uri" ]]; then
  info "Deleting ECR repository $REPOSITORY and its images"
  aws_ ecr delete-repository --repository-name "$REPOSITORY" --force >/dev/null
  REMOVED+=("ECR repository $REPOSITORY with its images")
fi

# The stack deletes its log group, but Lambda writes a new one if a request was still running: check.
log_groups="$(aws_ logs describe-log-groups --log-group-name-prefix "$LOG_GROUP" \
  --query "logGroups[?logGroupName=='$LOG_GROUP'] | length(@)" --output text)"
if [[ "$log_groups" != 0 ]]; then
  info "Deleting log group $LOG_GROUP"
  aws_ logs delete-log-group --log-group-name "$LOG_GROUP"
  REMOVED+=("log group $LOG_GROUP")
fi

echo
if [[ ${#REMOVED[@]} -eq 0 ]]; then
  echo "Nothing to remove: no Fair-Forge resources for '$MODULE' in $REGION."
else
  echo "Removed from account $ACCOUNT_ID, region $REGION:"
  for item in "${REMOVED[@]}"; do
    echo "  - $item"
  done
fi
