# One image for every role; the container's command picks the role (see infra/modules/apps.bicep).
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY shared ./shared
COPY initiator ./initiator
COPY processor ./processor
COPY controller ./controller
COPY billing ./billing
RUN pip install ".[postgres]" && useradd --create-home billing
USER billing
EXPOSE 8000
CMD ["billing", "initiator", "--host", "0.0.0.0"]
