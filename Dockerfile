# The Lambda container image of Fair-Forge Agentic.
#
#   docker build --platform linux/amd64 --provenance=false -t fair-forge-agentic .
#
# scripts/deploy.sh and scripts/update.sh build it for the function's architecture and push it to ECR.
# The base image is pinned by digest (the image index's: both architectures), so that a rebuild gets the same
# base until `make pin` moves it (with `make lock`, which refreshes the Python dependencies at the same time).
# BASE_IMAGE lets a mirror stand in for the public AWS base image.
ARG BASE_IMAGE=public.ecr.aws/lambda/python:3.12@sha256:0628ddc11919f85f4261517d356392dbbc6b3181568d87a376ae2e814464c230
FROM ${BASE_IMAGE}

# Dependencies first, so that a code-only change reuses this (slow, large) layer. They come from the lock
# (requirements.txt pinned, with hashes: `make lock`), so every build installs the same, verified files.
# --no-cache-dir: pip's download cache would only make the image bigger.
COPY requirements.lock ${LAMBDA_TASK_ROOT}/
RUN pip install --no-cache-dir --disable-pip-version-check --require-hashes --no-deps \
        -r "${LAMBDA_TASK_ROOT}/requirements.lock"

# Only the two runtime packages; .dockerignore keeps tests, caches and everything else out of the context.
COPY handler/ ${LAMBDA_TASK_ROOT}/handler/
COPY fair_forge_core/ ${LAMBDA_TASK_ROOT}/fair_forge_core/

# Lambda's file system is read-only at run time, so bytecode that is not in the image is compiled again on
# every cold start: compile it once here.
RUN python -m compileall -q "${LAMBDA_TASK_ROOT}/handler" "${LAMBDA_TASK_ROOT}/fair_forge_core"

CMD ["handler.app.lambda_handler"]
