# CPU image by default; --build-arg VARIANT=gpu builds on a CUDA base image with the TensorRT and NVML extras.
ARG VARIANT=cpu
ARG CPU_BASE=python:3.11-slim
ARG GPU_BASE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04

FROM ${CPU_BASE} AS base-cpu
ENV EXTRAS=""

FROM ${GPU_BASE} AS base-gpu
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv python3-dev \
    && rm -rf /var/lib/apt/lists/* && ln -sf /usr/bin/python3 /usr/local/bin/python
ENV EXTRAS="[tensorrt,nvidia]"

FROM base-${VARIANT}
RUN apt-get update && apt-get install -y --no-install-recommends gcc g++ make \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY planner ./planner
COPY targets ./targets
RUN python -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir ".${EXTRAS}"
ENV PATH="/opt/venv/bin:${PATH}" TERM=xterm-256color
ENTRYPOINT ["planner"]
