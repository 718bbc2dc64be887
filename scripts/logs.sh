#!/usr/bin/env bash
# Tails the function's CloudWatch logs (the source README's `aws logs tail`, with the names filled in).
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/logs.sh <module> <region> [--function api|worker|reduce|attempts|access] [--since 1h] [--no-follow] [--filter PATTERN] [--format short]

Prints the log events of /aws/lambda/fair-forge-<module> and keeps following new ones (Ctrl-C stops).
The asynchronous jobs log elsewhere: --function worker, reduce or attempts for their functions; --function access
is API Gateway's access log (one JSON line per request).

  scripts/logs.sh agentic us-east-1
  scripts/logs.sh agentic us-east-1 --since 15m --no-follow --filter ERROR

Options:
  --function NAME    api (POST /run, /jobs, GET /health; the default), worker, reduce or attempts (the jobs),
                     access (API Gateway's access log)
  --since DURATION   how far back to start: 30s, 15m, 1h, 2d, or a timestamp (default: 10m)
  --no-follow        print what is there and exit
  --filter PATTERN   a CloudWatch Logs filter pattern, e.g. ERROR or '{ $.level = "ERROR" }'
  --format FORMAT    short (time and message, the default), detailed (with the log stream) or json
  -h, --help         this help

Environment:
  AWS_ENDPOINT_URL   send every AWS call to this endpoint (a local emulator)
  AWS_PROFILE etc.   the usual AWS CLI configuration

Needs AWS CLI v2 (`aws logs tail` does not exist in v1).
EOF
}

# shellcheck source=scripts/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

SINCE=10m
FORMAT=short
FOLLOW=(--follow)
FILTER=()
LOGS_OF=api
POSITIONAL=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --since) [[ $# -ge 2 ]] || die "--since needs a value"; SINCE="$2"; shift 2 ;;
    --since=*) SINCE="${1#*=}"; shift ;;
    --function) [[ $# -ge 2 ]] || die "--function needs a value"; LOGS_OF="$2"; shift 2 ;;
    --function=*) LOGS_OF="${1#*=}"; shift ;;
    --follow) FOLLOW=(--follow); shift ;;
    --no-follow) FOLLOW=(); shift ;;
    --format) [[ $# -ge 2 ]] || die "--format needs a value"; FORMAT="$2"; shift 2 ;;
    --filter) [[ $# -ge 2 ]] || die "--filter needs a value"; FILTER=(--filter-pattern "$2"); shift 2 ;;
    -*) usage >&2; die "unknown option: $1" ;;
    *) POSITIONAL+=("$1"); shift ;;
  esac
done
set_target ${POSITIONAL[@]+"${POSITIONAL[@]}"}

case "$LOGS_OF" in
  api) ;;
  worker | reduce | attempts) LOG_GROUP="$LOG_GROUP-$LOGS_OF" ;;  # the template's /aws/lambda/fair-forge-<module>-<function>
  access) LOG_GROUP="$ACCESS_LOG_GROUP" ;;
  *) die "--function must be api, worker, reduce, attempts or access, not '$LOGS_OF'" ;;
esac

require_aws_cli_v2

# A clear word instead of ResourceNotFoundException when the module was never deployed here.
log_groups="$(aws_ logs describe-log-groups --log-group-name-prefix "$LOG_GROUP" \
  --query "logGroups[?logGroupName=='$LOG_GROUP'] | length(@)" --output text)"
if [[ "$log_groups" == 0 ]]; then
  die "no log group $LOG_GROUP in $REGION: is '$MODULE' deployed there (scripts/deploy.sh $MODULE $REGION)?"
fi

info "Logs of $LOG_GROUP since $SINCE${FOLLOW[0]+ (following; Ctrl-C stops)}"
# PYTHONUNBUFFERED: the AWS CLI is Python, which holds output to a pipe back until 8 KB have gathered, so
# `logs.sh ... | grep ERROR` would show nothing for a long time while following.
PYTHONUNBUFFERED=1 aws_ logs tail "$LOG_GROUP" --since "$SINCE" --format "$FORMAT" \
  ${FOLLOW[@]+"${FOLLOW[@]}"} ${FILTER[@]+"${FILTER[@]}"}
