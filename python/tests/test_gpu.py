"""The GPU helper imports without PyTorch and says what it needs when used without it."""

import importlib.util

import pytest


def test_gpu_module_imports_without_torch():
    import framelab.gpu

    assert framelab.gpu.GpuStages and framelab.gpu.CudaClock


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_without_torch_it_says_what_to_install():
    import framelab.gpu

    with pytest.raises(ImportError, match="needs PyTorch with CUDA: pip install torch"):
        framelab.gpu.GpuStages()
