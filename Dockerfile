# syntax=docker/dockerfile:1
# The Tether image: API (uvicorn), Celery worker and beat, and migrations all run from it;
# the Helm chart in charts/tether picks the command. Build from the repository root:
#   docker build -t tether:0.1.0 .

# ---- builder: dependencies and Tether installed into /opt/venv ---------------------
FROM python:3.11-slim AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

WORKDIR /app
# Every dependency pinned and hash-checked from the lock (make lock), then Tether itself
# from this tree without fetching anything else.
COPY requirements/runtime.lock requirements/
RUN pip install --require-hashes --no-deps -r requirements/runtime.lock
COPY pyproject.toml README.md ./
COPY platform/ platform/
COPY tenancy/ tenancy/
COPY workers/ workers/
# Editable on purpose: the code finds alembic.ini, migrations/ and policies/ relative to
# its own files (the repository root), so it must run from /app, not site-packages. The
# runtime stage puts the same tree at the same path, so the install stays valid there.
RUN pip install --no-deps --no-build-isolation -e .

# ---- runtime: the venv plus the source tree, as a non-root user --------------------
FROM python:3.11-slim AS runtime

ENV PATH=/opt/venv/bin:$PATH \
    OPENBLAS_NUM_THREADS=1 \
    OMP_NUM_THREADS=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TETHER_DATA_DIR=/tmp/tether

RUN groupadd --system --gid 10001 tether \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin tether

COPY --from=builder /opt/venv /opt/venv

WORKDIR /app
COPY platform/ platform/
COPY tenancy/ tenancy/
COPY workers/ workers/
COPY migrations/ migrations/
COPY policies/ policies/
COPY alembic.ini pyproject.toml ./
# Byte-compile now: the root filesystem is read-only at run time.
RUN python -m compileall -q platform tenancy workers migrations

USER 10001:10001
EXPOSE 8000 9000

# The API on TETHER_PORT; /health, /ready and /metrics on TETHER_API__OPS_PORT (decision 0061).
ENV TETHER_HOST=0.0.0.0 TETHER_PORT=8000 TETHER_API__OPS_PORT=9000
CMD ["tether", "api"]
