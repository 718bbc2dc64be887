#!/usr/bin/env bash
# Deploys (or updates in place) Fair-Forge Agentic into the current AWS account.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/deploy.sh <module> <region> [options]

Deploys Fair-Forge Agentic as the CloudFormation stack fair-forge-<module>: builds the Lambda image,
pushes it to the ECR repository fair-forge-<module> (created if missing) under a new immutable tag, uploads
the jobs state machine's definition to the S3 bucket fair-forge-artifacts-<account>-<region> (created if
missing), and creates or updates the stack from template.yaml. Running it again updates everything in place.

  scripts/deploy.sh agentic us-east-1

Options:
  --arch x86_64|arm64    architecture to build and run (default: x86_64, or $ARCH)
  --no-api-key           no API-key authentication: anyone with the URL can call the API
  --secret-arn ARN       Secrets Manager secret holding the service's own LLM provider key
  --agent-secret-prefix P  jobs that run an agent may name its credential's secret under this Secrets Manager
                         name prefix (AgentSecretPrefix, e.g. fair-forge/agents/); only their function reads them
  --agent-hosts HOSTS    comma-separated agent host names allowed besides public https endpoints (AgentHosts)
  --param Key=Value      any other template.yaml parameter (repeatable), e.g. --param MemorySize=2048
  --dry-run              show the changes the stack would undergo (a CloudFormation change set, then deleted)
                         and change nothing: no image is built or pushed, nothing is created or uploaded
  -h, --help             this help

Environment:
  AWS_ENDPOINT_URL   send every AWS call to this endpoint (a local emulator)
  DOCKER             the docker command (default: docker)
  IMAGE_TAG          the image tag to push (default: <UTC time>-<git sha>)
  AWS_PROFILE etc.   the usual AWS CLI configuration

Needs: the AWS CLI (v2) with credentials, and Docker (not for --dry-run).
EOF
}

# shellcheck source=scripts/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

ARCH="${ARCH:-x86_64}"
DRY_RUN=false
PARAMS=()
POSITIONAL=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --arch) [[ $# -ge 2 ]] || die "--arch needs a value"; ARCH="$2"; shift 2 ;;
    --arch=*) ARCH="${1#*=}"; shift ;;
    --no-api-key) PARAMS+=("RequireApiKey=false"); shift ;;
    --secret-arn) [[ $# -ge 2 ]] || die "--secret-arn needs a value"; PARAMS+=("LlmApiKeySecretArn=$2"); shift 2 ;;
    --agent-secret-prefix) [[ $# -ge 2 ]] || die "--agent-secret-prefix needs a value"; PARAMS+=("AgentSecretPrefix=$2"); shift 2 ;;
    --agent-hosts) [[ $# -ge 2 ]] || die "--agent-hosts needs a value"; PARAMS+=("AgentHosts=$2"); shift 2 ;;
    --param) [[ $# -ge 2 && "$2" == *=* ]] || die "--param needs Key=Value"; PARAMS+=("$2"); shift 2 ;;
    --dry-run) DRY_RUN=true; shift ;;
    -*) usage >&2; die "unknown option: $1" ;;
    *) POSITIONAL+=("$1"); shift ;;
  esac
done
set_target ${POSITIONAL[@]+"${POSITIONAL[@]}"}
docker_platform "$ARCH" >/dev/null # fail on a bad --arch before anything is built

require_aws_cli
[[ "$DRY_RUN" == true ]] || require_docker
require_aws_credentials

TEMPLATE="$(deployable_template)"
trap 'rm -f "$TEMPLATE"' EXIT

# `aws cloudformation deploy` with these; parameters not given keep their previous value (on a first
# deployment, the template's default).
deploy_stack() {
  aws_ cloudformation deploy \
    --stack-name "$STACK" \
    --template-file "$TEMPLATE" \
    --capabilities CAPABILITY_IAM \
    --no-fail-on-empty-changeset \
    --tags project=fair-forge "module=$MODULE" \
    --parameter-overrides "ModuleName=$MODULE" "ImageUri=$1" "Architecture=$ARCH" \
    "StateMachineDefinitionBucket=$DEFINITION_BUCKET" "StateMachineDefinitionKey=$DEFINITION_KEY" \
    ${PARAMS[@]+"${PARAMS[@]}"} "${@:2}"
}

# --dry-run: the change set a deployment would execute, printed, then deleted. The image stays the one the
# stack runs (a new stack gets a placeholder: nothing is built), and the state machine definition's name is
# computed but nothing is uploaded, so the only trace is the change set itself, removed at the end (and, for a
# stack that did not exist, the empty stack CloudFormation creates to hold it).
dry_run() {
  local status="$1" image out change_set changes
  if [[ -n "$status" && "$status" != REVIEW_IN_PROGRESS ]]; then
    image="$(stack_parameter ImageUri)"
  else
    image="${ACCOUNT_ID}.dkr.ecr.${REGION}.amazonaws.com/${REPOSITORY}:dry-run"
  fi
  state_machine_definition_location
  info "Dry run: creating a change set for stack $STACK (nothing is built, pushed, uploaded or deployed)"
  # (An emulator may refuse an empty change set outright, as AWS does an empty update: that is "no changes".)
  if ! out="$(deploy_stack "$image" --no-execute-changeset 2>&1)" &&
    [[ "$out" != *"No updates are to be performed"* && "$out" != *"didn't contain changes"* ]]; then
    die "could not create the change set: $out"
  fi
  # The CLI prints the command that describes the change set; with no change it prints no change set.
  change_set="$(grep -o 'describe-change-set --change-set-name [^ ]*' <<<"$out" | awk '{ print $3 }' || true)"
  if [[ -z "$change_set" ]]; then
    # CloudFormation keeps the empty change set (FAILED, "didn't contain changes"): remove it too.
    for change_set in $(aws_ cloudformation list-change-sets --stack-name "$STACK" --output text --query \
      "Summaries[?Status=='FAILED' && starts_with(ChangeSetName, 'awscli-cloudformation-package-deploy-')].ChangeSetId"); do
      aws_ cloudformation delete-change-set --change-set-name "$change_set"
    done
    echo "No changes: stack $STACK already matches template.yaml and these parameters."
  else
    changes="$(aws_ cloudformation describe-change-set --change-set-name "$change_set" --output text \
      --query 'Changes[].ResourceChange.[Action, LogicalResourceId, ResourceType, Replacement]')"
    aws_ cloudformation delete-change-set --change-set-name "$change_set"
    echo "Changes that deploying would make to stack $STACK (the change set is deleted; nothing was deployed):"
    if [[ -z "$changes" ]]; then
      echo "  (none to resources: parameters or outputs only)"
    else
      printf '  %-8s %-28s %-36s %s\n' ACTION RESOURCE TYPE REPLACEMENT
      while IFS=$'\t' read -r action logical type replacement; do
        [[ "$replacement" != None ]] || replacement=""
        printf '  %-8s %-28s %-36s %s\n' "$action" "$logical" "$type" "$replacement"
      done <<<"$changes"
    fi
    echo "A real deployment also builds and pushes a new image (ImageUri) and deploys the API's stage anew."
  fi
  if [[ -z "$status" ]]; then # the empty stack that only held the change set
    aws_ cloudformation delete-stack --stack-name "$STACK"
    aws_ cloudformation wait stack-delete-complete --stack-name "$STACK"
  fi
}

status="$(stack_status)"
if [[ "$DRY_RUN" == true ]]; then
  [[ "$status" != ROLLBACK_COMPLETE ]] ||
    die "stack $STACK is left over from a failed first deployment; deploy.sh without --dry-run deletes it first"
  [[ "$status" != *_IN_PROGRESS || "$status" == REVIEW_IN_PROGRESS ]] ||
    die "stack $STACK is busy ($status); wait for it to finish and run this again"
  dry_run "$status"
  exit 0
fi
info "Deploying $STACK to account $ACCOUNT_ID, region $REGION"

# A stack whose first creation failed stays in ROLLBACK_COMPLETE and can only be deleted; it holds
# nothing, so delete it and create it afresh rather than make the user do it.
if [[ "$status" == ROLLBACK_COMPLETE ]]; then
  info "Stack $STACK is left over from a failed first deployment; deleting it first"
  aws_ cloudformation delete-stack --stack-name "$STACK"
  aws_ cloudformation wait stack-delete-complete --stack-name "$STACK"
elif [[ "$status" == *_IN_PROGRESS && "$status" != REVIEW_IN_PROGRESS ]]; then
  # (REVIEW_IN_PROGRESS is a stack that has only an unexecuted change set: deploy carries on from it.)
  die "stack $STACK is busy ($status); wait for it to finish and run this again"
fi

REPO_URI="$(repository_uri)"
if [[ -z "$REPO_URI" ]]; then
  info "Creating ECR repository $REPOSITORY"
  # IMMUTABLE: a tag always names the same image, so the function's ImageUri says exactly what runs.
  aws_ ecr create-repository --repository-name "$REPOSITORY" \
    --image-tag-mutability IMMUTABLE \
    --image-scanning-configuration scanOnPush=true \
    --tags Key=project,Value=fair-forge "Key=module,Value=$MODULE" >/dev/null
  # Every deploy/update pushes a new image: keep the newest 10 so storage does not grow without end.
  aws_ ecr put-lifecycle-policy --repository-name "$REPOSITORY" --lifecycle-policy-text \
    '{"rules":[{"rulePriority":1,"description":"keep the newest 10 images","selection":{"tagStatus":"any","countType":"imageCountMoreThan","countNumber":10},"action":{"type":"expire"}}]}' \
    >/dev/null
  REPO_URI="$(repository_uri)"
fi

build_and_push "$REPO_URI" "$(new_image_tag)" "$ARCH"
# The operator's KMS key encrypts the uploaded definition too: the one given now, else the stack's.
DEFINITION_KMS_KEY=""
for param in ${PARAMS[@]+"${PARAMS[@]}"}; do
  [[ "$param" != KmsKeyArn=* ]] || DEFINITION_KMS_KEY="${param#KmsKeyArn=}"
done
if [[ -n "$status" && "$status" != ROLLBACK_COMPLETE && " ${PARAMS[*]-} " != *" KmsKeyArn="* ]]; then
  DEFINITION_KMS_KEY="$(stack_parameter KmsKeyArn)"
fi
upload_state_machine_definition

info "Deploying CloudFormation stack $STACK (this takes a minute or two on AWS)"
# `deploy` creates the stack or applies a change set to it.
if ! deploy_stack "$IMAGE_URI"; then
  echo "Recent failures of stack $STACK:" >&2
  stack_failures >&2
  die "the stack deployment failed (see above, or the CloudFormation console)"
fi

# The stack's outputs say where everything is (one call: each costs a second). An emulator may leave them
# empty (moto does for stacks made through change sets, which is how `deploy` works), so each falls back
# to the names the template gives.
query="Stacks[0].["
for key in InvokeUrl FunctionName LogGroupName ApiKeyId; do
  query+="Outputs[?OutputKey=='$key'].OutputValue | [0], "
done
query+="Parameters[?ParameterKey=='RequireApiKey'].ParameterValue | [0], "
query+="Parameters[?ParameterKey=='StageName'].ParameterValue | [0]]"
# Text output: the six values on one line, tab-separated, None for a missing one.
stack_facts="$(aws_ cloudformation describe-stacks --stack-name "$STACK" --output text --query "$query")"
read -r INVOKE_URL FUNCTION_NAME LOG_GROUP_NAME API_KEY_ID REQUIRE_API_KEY STAGE <<<"$stack_facts"
none_to_empty() { [[ "$1" == None ]] || echo "$1"; }
INVOKE_URL="$(none_to_empty "$INVOKE_URL")"
API_KEY_ID="$(none_to_empty "$API_KEY_ID")"
[[ "$STAGE" != None ]] || STAGE=prod
api_id="$(rest_api_id)"
redeploy_api "$api_id" "$STAGE"
if [[ -z "$INVOKE_URL" ]]; then
  INVOKE_URL="https://${api_id}.execute-api.${REGION}.amazonaws.com/${STAGE}"
fi
[[ "$FUNCTION_NAME" != None ]] || FUNCTION_NAME="$FUNCTION"
[[ "$LOG_GROUP_NAME" != None ]] || LOG_GROUP_NAME="$LOG_GROUP"
AWS_HINT="$(aws_hint)"
# The key's value is a secret: print how to read it, never the value (terminals and CI logs are kept).
if [[ -n "$API_KEY_ID" ]]; then
  READ_KEY="$AWS_HINT apigateway get-api-key --api-key $API_KEY_ID --include-value --query value --output text"
else
  READ_KEY="$AWS_HINT apigateway get-api-keys --include-values --query \"items[?name=='$NAME'].value | [0]\" --output text"
fi
EXAMPLE="$PROJECT_ROOT/examples/calculator.json"

echo
echo "Deployed $STACK ($IMAGE_URI)"
echo "  Invoke URL:  $INVOKE_URL"
echo "  Function:    $FUNCTION_NAME"
echo "  Log group:   $LOG_GROUP_NAME   (scripts/logs.sh $MODULE $REGION)"
echo
if [[ "$REQUIRE_API_KEY" != false ]]; then
  echo "Calls need the API key ${API_KEY_ID:-$NAME} in the x-api-key header. Read its value with:"
  echo "  $READ_KEY"
  echo
  echo "Try it (a new key can take a minute to work; until then the API answers 403):"
  echo "  API_KEY=\$($READ_KEY)"
  echo "  curl -sS -X POST '$INVOKE_URL/run' -H 'Content-Type: application/json' -H \"x-api-key: \$API_KEY\" --data '@$EXAMPLE'"
  echo
  echo "Large evaluations run as jobs: POST the same body to $INVOKE_URL/jobs, then GET the status_url it returns."
else
  echo "No API key: the API is open to anyone who has the URL (RequireApiKey=false). Try it:"
  echo "  curl -sS -X POST '$INVOKE_URL/run' -H 'Content-Type: application/json' --data '@$EXAMPLE'"
  echo
  echo "Large evaluations run as jobs: POST the same body to $INVOKE_URL/jobs, then GET the status_url it returns."
fi
