"""Every kernels/*.cu compiles with nvcc, warnings as errors, for a current
architecture (sm_90) and the oldest one this nvcc still supports among those
we target (sm_75; CUDA 13 dropped sm_70). Needs no GPU, only the toolkit."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gputree.backends.cuda.c_kernels import KERNEL_FILES, kernel_dir, kernel_source

ARCHS = ("sm_90", "sm_75")


def find_nvcc():
    found = shutil.which("nvcc")
    if found is None and os.environ.get("CUDA_HOME"):
        candidate = Path(os.environ["CUDA_HOME"]) / "bin" / "nvcc"
        found = str(candidate) if candidate.is_file() else None
    return found


@pytest.fixture(scope="module")
def nvcc():
    found = find_nvcc()
    if found is None:
        pytest.skip("NVCC NOT FOUND (neither on PATH nor in $CUDA_HOME/bin): the CUDA C kernels "
                    "were NOT compile-checked. Install the CUDA toolkit to run this check.")
    return found


def test_every_kernel_file_is_checked():
    assert sorted(p.name for p in kernel_dir().glob("*.cu")) == sorted(KERNEL_FILES)


def compile_cubin(nvcc, source: Path, arch: str, out_dir: Path):
    cmd = [nvcc, "-cubin", f"-arch={arch}", "-Werror", "all-warnings", "--std=c++17",
           f"-I{kernel_dir()}", str(source), "-o", str(out_dir / "out.cubin")]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stdout}\n{done.stderr}"
    assert (out_dir / "out.cubin").stat().st_size > 0


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", KERNEL_FILES)
def test_kernel_compiles_without_warnings(nvcc, name, arch, tmp_path):
    compile_cubin(nvcc, kernel_dir() / name, arch, tmp_path)


def test_combined_module_source_compiles(nvcc, tmp_path):
    """The one text that cupy.RawModule compiles (all files, headers inlined)."""
    source = tmp_path / "gputree_kernels.cu"
    source.write_text(kernel_source())
    compile_cubin(nvcc, source, ARCHS[0], tmp_path)
