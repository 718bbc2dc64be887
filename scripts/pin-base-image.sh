#!/usr/bin/env bash
# Pins the Dockerfile's base image to the digest its tag points at now. `make pin` runs it, then `make lock`.
set -euo pipefail

usage() {
  cat <<'EOF2'
Usage: scripts/pin-base-image.sh

Resolves the tag of the Dockerfile's base image (ARG BASE_IMAGE=public.ecr.aws/lambda/python:3.12@sha256:...)
to the digest the registry gives it now, and writes that digest into the Dockerfile. The digest is the
image index's, which covers both architectures (x86_64 and arm64). Needs the network and one of: crane, or
docker with buildx (`docker buildx imagetools inspect`). `make pin` runs this, then `make lock`, so that the
base image and the Python dependencies are refreshed together.

Options:
  -h, --help   this help

Environment:
  DOCKER   the docker command (default: docker)
EOF2
}

# shellcheck source=scripts/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) usage >&2; die "unknown argument: $1" ;;
esac

DOCKERFILE="$PROJECT_ROOT/Dockerfile"
line="$(grep -E '^ARG BASE_IMAGE=' "$DOCKERFILE")" || die "no 'ARG BASE_IMAGE=' line in $DOCKERFILE"
image="${line#ARG BASE_IMAGE=}"
tag="${image%@*}" # the tag without the old digest

if command -v crane >/dev/null 2>&1; then
  digest="$(crane digest "$tag")"
elif "${DOCKER_CMD[@]}" buildx version >/dev/null 2>&1; then
  digest="$("${DOCKER_CMD[@]}" buildx imagetools inspect "$tag" | awk '$1 == "Digest:" { print $2; exit }')"
else
  die "need crane (https://github.com/google/go-containerregistry) or docker buildx to resolve $tag"
fi
[[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || die "could not resolve $tag to a digest (got '$digest')"

# (sed -i with a suffix works in GNU and BSD sed alike.)
sed -i.bak "s|^ARG BASE_IMAGE=.*|ARG BASE_IMAGE=${tag}@${digest}|" "$DOCKERFILE"
rm -f "$DOCKERFILE.bak"
if [[ "$image" == "${tag}@${digest}" ]]; then
  info "$tag is still $digest"
else
  info "Pinned $tag to $digest (was ${image#"$tag"})"
fi
