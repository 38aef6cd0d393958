"""The CUDA C emulator itself (gputree.backends.cuda.emulator): thread and block
indexing, barriers, static and dynamic shared memory, atomics across blocks
run on several OS threads, argument checking, and its error messages."""
import numpy as np
import pytest

from gputree.backends.cuda.emulator import EmulatedModule, EmulatorUnavailableError, expand_includes
from gputree.backends.cuda.emulator import loader

try:
    loader.find_compiler()
except EmulatorUnavailableError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"CUDA C emulator unavailable: {exc}", allow_module_level=True)

SOURCE = r'''
// IN/OUT comments inside the parameter list must not confuse the loader
extern "C" __global__ void global_ids(
    int* ids,   // OUT (n,) flat thread id written at its own slot
    int n)
{
    const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const int id = b * blockDim.x * blockDim.y * blockDim.z + t;
    if (id < n) ids[id] = id;
}

extern "C" __global__ void reverse_blocks(const double* in, double* out, int n)
{
    extern __shared__ double tile[];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? in[i] : 0.0;
    __syncthreads();
    const int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - threadIdx.x);
    if (j < n) out[j] = tile[threadIdx.x];
}

extern "C" __global__ void block_sums(const long long* in, long long* block_total,
                                      unsigned long long* grand_total, int n)
{
    __shared__ long long partial;
    if (threadIdx.x == 0) partial = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        atomicAdd((unsigned long long*)&partial, (unsigned long long)in[i]);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        block_total[blockIdx.x] = partial;
        atomicAdd(grand_total, (unsigned long long)partial);
    }
}
'''


@pytest.fixture(scope="module")
def module():
    return EmulatedModule(SOURCE, n_workers=3)


@pytest.mark.parametrize("grid, block", [(5, 7), ((2, 3), (4, 2, 3)), ((2, 2, 2), (3, 1, 2))])
def test_every_thread_of_every_block_runs_once(module, grid, block):
    total = int(np.prod(grid) * np.prod(block))
    ids = np.full(total, -1, np.int32)
    module.get_function("global_ids")(grid, block, (ids, np.int32(total)))
    np.testing.assert_array_equal(ids, np.arange(total))


@pytest.mark.parametrize("n, threads", [(100, 32), (7, 8), (64, 64)])
def test_barrier_and_dynamic_shared_memory(module, n, threads):
    x = np.arange(n, dtype=np.float64)
    out = np.zeros(n)
    grid = -(-n // threads)
    module.get_function("reverse_blocks")(grid, threads, (x, out, np.int32(n)), shared_mem=threads * 8)
    padded = np.zeros(grid * threads)
    padded[:n] = x
    np.testing.assert_array_equal(out, padded.reshape(grid, threads)[:, ::-1].ravel()[:n])


def test_static_shared_memory_and_atomics_across_blocks(module):
    rng = np.random.default_rng(0)
    n, grid = 5000, 9
    values = rng.integers(-2**40, 2**40, n)
    per_block = np.zeros(grid, np.int64)
    grand = np.zeros(1, np.uint64)
    module.get_function("block_sums")(grid, 64, (values, per_block, grand, np.int32(n)))
    owner = (np.arange(n) // 64) % grid
    np.testing.assert_array_equal(per_block, [values[owner == b].sum() for b in range(grid)])
    assert grand.view(np.int64)[0] == values.sum()


def test_arguments_are_checked_against_the_c_signature(module):
    ids = np.zeros(4, np.int32)
    kernel = module.get_function("global_ids")
    with pytest.raises(TypeError, match="numpy scalar"):
        kernel(1, 4, (ids, 4))
    with pytest.raises(TypeError, match="int64 scalar"):
        kernel(1, 4, (ids, np.int64(4)))
    with pytest.raises(TypeError, match="float32"):
        kernel(1, 4, (ids.astype(np.float32), np.int32(4)))
    with pytest.raises(TypeError, match="takes 2 arguments"):
        kernel(1, 4, (ids,))


def test_invalid_launches_and_names_raise(module):
    kernel = module.get_function("global_ids")
    with pytest.raises(ValueError, match="launch configuration"):
        kernel(1, 2048, (np.zeros(1, np.int32), np.int32(1)))
    with pytest.raises(AttributeError, match="no_such_kernel"):
        module.get_function("no_such_kernel")


def test_compiled_library_is_cached(module):
    again = EmulatedModule(SOURCE)
    assert again._library._name == module._library._name


def test_missing_compiler_says_what_to_install(monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-gputree")
    with pytest.raises(EmulatorUnavailableError, match="g\\+\\+.*cuda-sim|cuda-sim.*g\\+\\+"):
        EmulatedModule("extern \"C\" __global__ void k(int n) {}")


def test_compile_errors_show_the_compiler_output():
    with pytest.raises(RuntimeError, match="not_declared_anywhere"):
        EmulatedModule('extern "C" __global__ void k(int n) { not_declared_anywhere(n); }')


def test_expand_includes_inlines_each_header_once(tmp_path):
    (tmp_path / "a.cuh").write_text('#include "b.cuh"\nint a;\n')
    (tmp_path / "b.cuh").write_text("int b;\n")
    text = expand_includes('#include "a.cuh"\n#include "b.cuh"\n#include "missing.cuh"\n', [tmp_path])
    assert text.count("int b;") == 1 and "int a;" in text and '#include "missing.cuh"' in text
