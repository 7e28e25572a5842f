# syntax=docker/dockerfile:1
# Build: a virtual environment with the project and its dependencies.
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
# The dependencies first, in a layer of their own: a change to the code
# rebuilds only the last layer instead of downloading every dependency again.
COPY pyproject.toml ./
RUN python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep='\n')" > requirements.txt \
    && pip install -r requirements.txt
COPY setup.py README.md LICENSE ./
COPY app ./app
COPY migrations ./migrations
RUN pip install --no-deps .

# Run: only the virtual environment, as an unprivileged user.
FROM python:3.11-slim AS runtime
RUN useradd --system --uid 10001 --create-home --home-dir /data session-state
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    SESSION_STATE_HOST=0.0.0.0 \
    SESSION_STATE_PORT=8000
# The embedded SQLite default writes ./session_state.db here.
WORKDIR /data
USER session-state
EXPOSE 8000
# No curl in slim images: ask /healthz with the standard library.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ['SESSION_STATE_PORT'] + '/healthz', timeout=2)"]
ENTRYPOINT ["session-state"]
CMD ["serve"]
