#!/usr/bin/env bash
# Removes everything deploy.sh created for a module. Safe to run again: what is already gone is skipped.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/cleanup.sh <module> <region> [--yes]

Removes Fair-Forge Agentic's AWS resources for <module>: stops the jobs still running, then deletes
the CloudFormation stack fair-forge-<module>
(functions, roles, REST API, API key, usage plan, log groups, the jobs bucket with every job in it, the
state machine, the dead-letter queue if any, the jobs KMS key, which AWS deletes after its 7-day waiting
period), the ECR repository
fair-forge-<module> with all its images, the log groups /aws/lambda/fair-forge-<module>[-worker|-reduce|-attempts],
and the module's state machine definitions in s3://fair-forge-artifacts-<account>-<region> (the bucket
too once it is empty). Asks first unless --yes is given.
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
set_target ${POSITIONAL[@]+"${POSITIONAL[@]}"}

require_aws_cli
require_aws_credentials

if [[ "$YES" != true ]]; then
  echo "This deletes, in account $ACCOUNT_ID, region $REGION:"
  echo "  - CloudFormation stack $STACK (functions, roles, REST API, API key, usage plan, state machine)"
  echo "  - its jobs bucket and every job in it; its KMS key (deleted by AWS after 7 days)"
  echo "  - ECR repository $REPOSITORY and every image in it"
  echo "  - log groups ${LOG_GROUPS[*]} and every log in them"
  echo "  - the state machine definitions under s3://$(artifacts_bucket)/$MODULE/"
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
  # The jobs bucket and state machine of the stack (None for a stack deployed before jobs existed).
  if ! out="$(aws_ cloudformation list-stack-resources --stack-name "$STACK" --output text --query \
    "StackResourceSummaries[?LogicalResourceId=='JobsBucket' || LogicalResourceId=='StateMachine'].[LogicalResourceId, PhysicalResourceId]" 2>&1)"; then
    die "could not read the resources of stack $STACK: $out"
  fi
  jobs_bucket="$(awk '$1 == "JobsBucket" { print $2 }' <<<"$out")"
  state_machine="$(awk '$1 == "StateMachine" { print $2 }' <<<"$out")"
  # Running jobs are stopped first, so that no worker writes into the bucket while it is being deleted.
  if [[ "$state_machine" == arn:* ]]; then
    running="$(aws_ stepfunctions list-executions --state-machine-arn "$state_machine" --status-filter RUNNING \
      --query 'executions[].executionArn' --output text)"
    for execution in $running; do
      [[ "$execution" != None ]] || continue
      info "Stopping the running job ${execution##*:}"
      aws_ stepfunctions stop-execution --execution-arn "$execution" --error Cleanup \
        --cause "scripts/cleanup.sh removed the service" >/dev/null
      REMOVED+=("running job ${execution##*:} (stopped)")
    done
  fi
  # CloudFormation cannot delete a bucket that holds objects: empty the jobs bucket first.
  if [[ -n "$jobs_bucket" && "$jobs_bucket" != None ]] && aws_ s3api head-bucket --bucket "$jobs_bucket" >/dev/null 2>&1; then
    info "Emptying the jobs bucket $jobs_bucket"
    aws_ s3 rm "s3://$jobs_bucket" --recursive --quiet
    REMOVED+=("the jobs bucket $jobs_bucket and every job in it")
  fi
  info "Deleting stack $STACK (this takes a minute or two on AWS)"
  aws_ cloudformation delete-stack --stack-name "$STACK"
  if ! aws_ cloudformation wait stack-delete-complete --stack-name "$STACK"; then
    echo "Recent failures of stack $STACK:" >&2
    stack_failures >&2
    die "the stack could not be deleted (see above); fix that and run this again"
  fi
  REMOVED+=("CloudFormation stack $STACK with what it held (functions $FUNCTION, $WORKER_FUNCTION, $REDUCE_FUNCTION, $ATTEMPTS_FUNCTION, their roles, API, key, usage plan, state machine $STATE_MACHINE, jobs KMS key)")
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

# The stack deletes its log groups, but Lambda writes a new one if a request was still running: check.
for group in "${LOG_GROUPS[@]}"; do
  log_groups="$(aws_ logs describe-log-groups --log-group-name-prefix "$group" \
    --query "logGroups[?logGroupName=='$group'] | length(@)" --output text)"
  if [[ "$log_groups" != 0 ]]; then
    info "Deleting log group $group"
    aws_ logs delete-log-group --log-group-name "$group"
    REMOVED+=("log group $group")
  fi
done

# The state machine definitions deploy.sh uploaded for this module; the bucket itself once no module uses it.
ARTIFACTS="$(artifacts_bucket)"
if aws_ s3api head-bucket --bucket "$ARTIFACTS" --expected-bucket-owner "$ACCOUNT_ID" >/dev/null 2>&1; then
  definitions="$(aws_ s3api list-objects-v2 --bucket "$ARTIFACTS" --prefix "$MODULE/" --query 'KeyCount' --output text)"
  if [[ "$definitions" != 0 ]]; then
    info "Deleting the state machine definitions under s3://$ARTIFACTS/$MODULE/"
    aws_ s3 rm "s3://$ARTIFACTS/$MODULE/" --recursive --quiet
    REMOVED+=("state machine definitions under s3://$ARTIFACTS/$MODULE/")
  fi
  left="$(aws_ s3api list-objects-v2 --bucket "$ARTIFACTS" --max-keys 1 --query 'KeyCount' --output text)"
  if [[ "$left" == 0 ]]; then
    info "Deleting the empty S3 bucket $ARTIFACTS"
    aws_ s3api delete-bucket --bucket "$ARTIFACTS"
    REMOVED+=("S3 bucket $ARTIFACTS")
  fi
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
