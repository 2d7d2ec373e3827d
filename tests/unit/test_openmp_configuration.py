"""An OpenMP region's kernel environment read for its CPU run: LLVM 19's layout, the shorter one of earlier
runtimes (one reduction field, not read), and one not read, which is refused rather than taken for a CUDA kernel."""

from __future__ import annotations

import pytest

from stitchopt.errors import InputError
from stitchopt.toolchain.simt import OpenmpConfiguration, openmp_configuration

REGION = "__omp_offloading_fe00_51208f_center_l13"
PREFIX = f"@{REGION}_kernel_environment = weak_odr protected constant %struct.KernelEnvironmentTy "


def test_llvm_19s_kernel_environment_gives_mode_threads_and_the_reduction_buffer() -> None:
    fields = "i8 0, i8 0, i8 2, i32 1, i32 128, i32 0, i32 0, i32 8, i32 1024"
    ir = PREFIX + f"{{ %struct.ConfigurationEnvironmentTy {{ {fields} }}, ptr @1, ptr null }}\n"
    assert openmp_configuration(ir, REGION) == OpenmpConfiguration(2, 128, 8 * 1024)
    assert openmp_configuration(ir, REGION + "_other") is None  # another kernel (a CUDA one) has none


def test_a_shorter_environment_has_no_reduction_buffer_and_an_unread_one_is_refused() -> None:
    shorter = (
        PREFIX + "{ %struct.ConfigurationEnvironmentTy { i8 1, i8 0, i8 1, i32 1, i32 -1, i32 0, i32 0, i32 0 } }\n"
    )
    configuration = openmp_configuration(shorter, REGION)
    assert configuration == OpenmpConfiguration(1, -1, 0) and not configuration.spmd
    with pytest.raises(InputError, match="kernel environment is in a form the CPU run does not read"):
        openmp_configuration(PREFIX + "zeroinitializer\n", REGION)
