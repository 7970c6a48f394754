# One image for every role. The command runs the role named by BILLING_ROLE (initiator by
# default) with BILLING_ROLE_ARGS, so a Container App keeps its role whatever image azd
# deploys into it (infra/modules/app.bicep); docker compose names the command itself.
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY shared ./shared
COPY initiator ./initiator
COPY processor ./processor
COPY controller ./controller
COPY billing ./billing
RUN pip install ".[postgres,azure-monitor]" && useradd --create-home billing
USER billing
EXPOSE 8000
CMD ["sh", "-c", "exec billing \"${BILLING_ROLE:-initiator}\" ${BILLING_ROLE_ARGS:-}"]
