# One image for every role. The command runs the role named by BILLING_ROLE (initiator by
# default) with BILLING_ROLE_ARGS, so a Container App keeps its role whatever image azd
# deploys into it (infra/modules/app.bicep); docker compose names the command itself. Layers, from the least to the most often changed:
#   1. the base image and a virtual environment;
#   2. the dependencies, read from pyproject.toml alone: a code edit does not reinstall them;
#   3. the sources (what .dockerignore lets in), installed without dependencies.
# PYTHON_IMAGE: the official Python image by default; any image with Python >= 3.11 and its
# venv module will do (CI builds one from Debian's packages, see docs/compose.md "How CI runs the
# compose file").
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH
RUN python -m venv /opt/venv

# 2. Dependencies: the project's own plus the extras the deployed roles use (the PostgreSQL
# driver, Azure Monitor telemetry), listed from pyproject.toml without the sources, at the
# versions of constraints.txt (the tested ones).
WORKDIR /src
COPY pyproject.toml constraints.txt ./
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
extras = p['optional-dependencies']; \
print('\n'.join(p['dependencies'] + extras['postgres'] + extras['azure-monitor']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt -c constraints.txt \
    && rm /tmp/requirements.txt

# 3. The sources, then the project itself (its dependencies are already there).
COPY . ./
RUN pip install --no-deps . \
    && rm -rf /src/build \
    && useradd --system --uid 10001 --create-home --home-dir /home/billing billing

# Roles run unprivileged. The processor and the controller touch the liveness file while
# they are well; billing-healthcheck reads it, or asks the initiator's /healthz.
USER billing
WORKDIR /home/billing
ENV BILLING_HOST=0.0.0.0 \
    BILLING_LIVENESS_FILE=/tmp/billing-alive
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["billing-healthcheck"]
CMD ["sh", "-c", "exec billing \"${BILLING_ROLE:-initiator}\" ${BILLING_ROLE_ARGS:-}"]
