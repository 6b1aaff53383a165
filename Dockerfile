# miroctl's HTTP gateway in a container: the bundled servers and config, Prometheus metrics, a non-root user.
#   docker build -t miroctl .
#   docker run -p 8765:8765 -e MIROCTL_TOKEN=$(openssl rand -hex 24) miroctl
# docs/deploy.md runs it on Kubernetes (probes, drain, autoscaling, state on shared storage).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY miroctl ./miroctl
COPY servers ./servers
COPY config ./config
RUN pip install '.[metrics,markitdown]' \
    && rm -rf /src \
    && useradd --create-home --uid 10001 --user-group miroctl \
    && mkdir -p /var/lib/miroctl/sandboxes /var/lib/miroctl/downloads /var/lib/miroctl/planner \
    && chown -R miroctl:miroctl /var/lib/miroctl

# State the bundled servers keep on disk: mount a volume here (shared storage for a pool of replicas).
ENV SANDBOX_DIR=/var/lib/miroctl/sandboxes \
    SANDBOX_DOWNLOAD_DIR=/var/lib/miroctl/downloads \
    PLANNER_STATE_DIR=/var/lib/miroctl/planner

USER 10001:10001
WORKDIR /home/miroctl
EXPOSE 8765

# The bundled default profile (no miroctl.yaml in the working directory). Anything but loopback needs a token:
# set MIROCTL_TOKEN. The drain's grace stays below Kubernetes' default terminationGracePeriodSeconds (30).
ENTRYPOINT ["miroctl"]
CMD ["serve", "--transport", "http", "--host", "0.0.0.0", "--port", "8765", \
     "--token-env", "MIROCTL_TOKEN", "--grace", "20"]
