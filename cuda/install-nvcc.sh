#!/bin/sh
# Installs the pinned nvcc 13.0 from PyPI into .venv-cuda/ at the repo root, where build.rs finds it.
# Pinned: PTX from a newer nvcc can be refused by the device's driver (580 / CUDA 13.0).
set -eu
cd "$(dirname "$0")/.."
python3 -m venv .venv-cuda
.venv-cuda/bin/pip install --quiet \
    nvidia-cuda-nvcc==13.0.88 \
    nvidia-nvvm==13.0.88 \
    nvidia-cuda-crt==13.0.88 \
    nvidia-cuda-runtime==13.0.96 \
    nvidia-cuda-cccl==13.0.85
ls .venv-cuda/lib/python3*/site-packages/nvidia/cu13/bin/nvcc
# cargo reruns build.rs only when a file it watches changes: make it look again and find this nvcc
touch build.rs
