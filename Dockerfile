# syntax=docker/dockerfile:1
# aio-media-driver: an Aeron 1.15.1 compatible media driver.
#   docker build -t aio-media-driver .
#   docker run --rm --ipc=shareable --shm-size=512m --name aeron aio-media-driver
# Clients in other containers share the driver's /dev/shm with --ipc=container:aeron (AERON_DIR=/dev/shm/aeron).

FROM python:3.11-slim AS builder
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Our wheel (compiles native/ through cffi), then wheels of its runtime dependencies.
RUN pip wheel --no-cache-dir --no-deps -w /wheels . \
    && pip wheel --no-cache-dir -w /wheels /wheels/aio_media_driver-*.whl

FROM python:3.11-slim
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links /wheels aio-media-driver \
    && useradd --system --no-create-home aeron
USER aeron
ENV AERON_DIR=/dev/shm/aeron \
    PYTHONUNBUFFERED=1
STOPSIGNAL SIGTERM
CMD ["mediadriver", "run"]
