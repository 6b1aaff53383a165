# miroctl's HTTP gateway in a container: the bundled servers and config, Prometheus metrics, a non-root user.
#   docker build -t miroctl .
#   docker run -p 8765:8765 -e MIROCTL_TOKEN=$(openssl rand -hex 24) miroctl
# docs/deploy.md runs it on Kubernetes (probes, drain, autoscaling, state on shared storage).
# BASE: any Debian-like image with python3 (3.11+) and its venv module. PIP_CERT, when given, is the CA bundle pip
# trusts during the build (a TLS-inspecting proxy's: bench/container_smoke.py mounts the host's and sets it).
ARG BASE=python:3.11-slim
FROM ${BASE}
ARG PIP_CERT

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/miroctl/bin:$PATH

WORKDIR /src
COPY pyproject.toml README.md ./
COPY miroctl ./miroctl
COPY servers ./servers
COPY config ./config
# A virtual environment, so that a base whose system Python refuses pip installs (PEP 668) works too.
RUN python3 -m venv /opt/miroctl \
    && /opt/miroctl/bin/pip install '.[metrics,markitdown]' \
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
