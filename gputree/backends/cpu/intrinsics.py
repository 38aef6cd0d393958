"""LLVM intrinsics the CPU kernels call as numba functions: a cache
prefetch of a row, the vector read-modify-writes that add two or three
channels to a histogram cell at once (the histogram pass), and the atomic
operations of threads that share work (a fetch-and-add, a
compare-and-swap, loads and stores that order the memory around them, a
spin-wait hint and a yield of the core: :mod:`.claims`)."""
import sys

from llvmlite import binding as llvm_binding
from llvmlite import ir as llvm_ir
from numba import types as numba_types
from numba.extending import intrinsic


def _element_address(builder, array, indices):
    """LLVM IR: the address (i64) of array[indices...] (its data pointer
    plus each index times its stride; ``array`` a numba array struct)."""
    address = builder.ptrtoint(array.data, llvm_ir.IntType(64))
    for axis, index in enumerate(indices):
        address = builder.add(address, builder.mul(builder.extract_value(array.strides, axis),
                                                   index))
    return address


def _llvm_function(module, name, returns, arguments):
    """The module's declaration of LLVM function ``name``, made if absent."""
    return module.globals.get(name) or llvm_ir.Function(
        module, llvm_ir.FunctionType(returns, arguments), name=name)


def _prefetch_codegen(context, builder, signature, args):
    """LLVM IR of prefetch_row: the address of array[row, 0], then a call
    of llvm.prefetch."""
    array = context.make_array(signature.args[0])(context, builder, args[0])
    byte_pointer = llvm_ir.IntType(8).as_pointer()
    opaque = getattr(byte_pointer, "is_opaque", False)
    i32 = llvm_ir.IntType(32)
    name = "llvm.prefetch.p0" if opaque else "llvm.prefetch.p0i8"
    function = _llvm_function(builder.module, name, llvm_ir.VoidType(),
                              [byte_pointer, i32, i32, i32])
    address = _element_address(builder, array, [args[1]])
    # read (0), keep in all cache levels (3), data (1)
    builder.call(function, [builder.inttoptr(address, byte_pointer), i32(0), i32(3), i32(1)])
    return context.get_dummy_value()


@intrinsic
def prefetch_row(typingctx, array, row):
    """Ask the cache for the line holding ``array[row, 0]`` (a 2-D array, int64
    row): llvm.prefetch, a hint that never faults."""
    return numba_types.void(array, row), _prefetch_codegen


def _cell_vector_codegen(n_lanes):
    """The LLVM IR of an intrinsic (dest, s, f, b, v0 .. v[n_lanes-1]) that
    adds the values to dest[s, f, b, 0:n_lanes] as one vector: a <2 x i64>
    load, add and store for two lanes; for three, a <4 x i64> one whose
    fourth lane is masked off (never read or written: the next cell may be
    another thread's)."""
    width = 2 if n_lanes == 2 else 4

    def codegen(context, builder, signature, args):
        dest = context.make_array(signature.args[0])(context, builder, args[0])
        i32 = llvm_ir.IntType(32)
        vector = llvm_ir.VectorType(llvm_ir.IntType(64), width)
        pointer = builder.inttoptr(_element_address(builder, dest, args[1:4]),
                                   vector.as_pointer())
        value = llvm_ir.Constant(vector, None)
        for k in range(n_lanes):
            value = builder.insert_element(value, args[4 + k], i32(k))
        if n_lanes == width:
            builder.store(builder.add(builder.load(pointer, align=8), value), pointer, align=8)
            return context.get_dummy_value()
        mask = llvm_ir.Constant(llvm_ir.VectorType(llvm_ir.IntType(1), width),
                                [int(k < n_lanes) for k in range(width)])
        suffix = f"v{width}i64." + ("p0" if getattr(pointer.type, "is_opaque", False)
                                    else f"p0v{width}i64")
        load = _llvm_function(builder.module, "llvm.masked.load." + suffix, vector,
                              [pointer.type, i32, mask.type, vector])
        store = _llvm_function(builder.module, "llvm.masked.store." + suffix,
                               llvm_ir.VoidType(), [vector, pointer.type, i32, mask.type])
        old = builder.call(load, [pointer, i32(8), mask, llvm_ir.Constant(vector, None)])
        builder.call(store, [builder.add(old, value), pointer, i32(8), mask])
        return context.get_dummy_value()
    return codegen


def _cell_vector_typing(dest, n_lanes):
    """(signature, codegen) of a cell vector add on ``dest``, or None (numba
    then refuses to compile the call) unless dest is a C-contiguous int64
    4-D array: the vector covers a cell's channels, which must be adjacent."""
    if not (isinstance(dest, numba_types.Array) and dest.dtype == numba_types.int64
            and dest.ndim == 4 and dest.layout == "C"):
        return None
    i = numba_types.int64
    return numba_types.void(dest, *([i] * (3 + n_lanes))), _cell_vector_codegen(n_lanes)


@intrinsic
def add_two(typingctx, dest, s, f, b, first, second):
    """dest[s, f, b, 0:2] INOUT += (first, second): one 16-byte
    read-modify-write instead of two (dest int64 4-D C-contiguous; the rest
    int64)."""
    return _cell_vector_typing(dest, 2)


@intrinsic
def add_three(typingctx, dest, s, f, b, first, second, third):
    """dest[s, f, b, 0:3] INOUT += (first, second, third): one masked
    32-byte read-modify-write instead of three (as add_two)."""
    return _cell_vector_typing(dest, 3)


def _cell_pointer(context, builder, signature, args):
    """LLVM IR: an i64* to array[index] (args[0], args[1])."""
    array = context.make_array(signature.args[0])(context, builder, args[0])
    return builder.inttoptr(_element_address(builder, array, [args[1]]),
                            llvm_ir.IntType(64).as_pointer())


def _fetch_add_codegen(context, builder, signature, args):
    """LLVM IR of fetch_add: an atomicrmw add on array[index], sequentially
    consistent (no memory access moves across it: a count of finished work
    published after the work's results)."""
    return builder.atomic_rmw("add", _cell_pointer(context, builder, signature, args),
                              args[2], "seq_cst")


def _compare_swap_codegen(context, builder, signature, args):
    """LLVM IR of compare_swap: a sequentially consistent cmpxchg."""
    pair = builder.cmpxchg(_cell_pointer(context, builder, signature, args), args[2], args[3],
                           "seq_cst", "seq_cst")
    return builder.extract_value(pair, 0)


def _load_codegen(context, builder, signature, args):
    """LLVM IR of atomic_load: an acquiring atomic load."""
    return builder.load_atomic(_cell_pointer(context, builder, signature, args), "acquire", 8)


def _store_codegen(context, builder, signature, args):
    """LLVM IR of atomic_store: a releasing atomic store."""
    builder.store_atomic(args[2], _cell_pointer(context, builder, signature, args),
                         "release", 8)
    return context.get_dummy_value()


def _int64_cell_typing(array, n_values, codegen, returns=True):
    """(signature, codegen) of an operation on array[index] of a 1-D int64
    array with ``n_values`` int64 values, or None (numba then refuses the
    call) for another array."""
    if not (isinstance(array, numba_types.Array) and array.dtype == numba_types.int64
            and array.ndim == 1):
        return None
    i = numba_types.int64
    result = i if returns else numba_types.void
    return result(array, i, *([i] * n_values)), codegen


@intrinsic
def compare_swap(typingctx, array, index, expected, value):
    """array[index] INOUT = value if it holds ``expected``, as one atomic
    operation; returns the value it held (``expected``: the swap was made)
    (array int64 1-D; the rest int64)."""
    return _int64_cell_typing(array, 2, _compare_swap_codegen)


@intrinsic
def atomic_load(typingctx, array, index):
    """array[index] read atomically, no later access moving before it
    (array int64 1-D, index int64): what another thread stored before an
    :func:`atomic_store` it made is seen after this load sees that store."""
    return _int64_cell_typing(array, 0, _load_codegen)


@intrinsic
def atomic_store(typingctx, array, index, value):
    """array[index] OUT = value atomically, no earlier access moving after
    it (array int64 1-D; index, value int64)."""
    return _int64_cell_typing(array, 1, _store_codegen, returns=False)


def _spin_pause_codegen(context, builder, signature, args):
    """LLVM IR of spin_pause: x86's pause instruction; elsewhere nothing
    (the loop's atomic load alone)."""
    if llvm_binding.get_process_triple().split("-")[0] in ("x86_64", "i386", "i686"):
        function = _llvm_function(builder.module, "llvm.x86.sse2.pause", llvm_ir.VoidType(),
                                  [])
        builder.call(function, [])
    return context.get_dummy_value()


def _yield_codegen(context, builder, signature, args):
    """LLVM IR of yield_core: a call of the C library's sched_yield (POSIX;
    elsewhere nothing)."""
    if sys.platform != "win32":
        function = _llvm_function(builder.module, "sched_yield", llvm_ir.IntType(32), [])
        builder.call(function, [])
    return context.get_dummy_value()


@intrinsic
def yield_core(typingctx):
    """Give the core to another thread that is ready to run on it, if any
    (sched_yield: some hundred ns when none is): a thread that waits for
    another's work yields now and then, so that on a machine with more
    threads ready than cores it leaves the core to them rather than spin."""
    return numba_types.void(), _yield_codegen


@intrinsic
def spin_pause(typingctx):
    """A hint to the core that the thread spins waiting for another
    (x86's pause: the sibling hyperthread runs, the loop's exit is not
    mispredicted)."""
    return numba_types.void(), _spin_pause_codegen


@intrinsic
def fetch_add(typingctx, array, index, value):
    """array[index] INOUT += value as one atomic operation, returning the
    value before (array int64 1-D; index, value int64): two threads that
    call it on the same cell each get a value of their own."""
    return _int64_cell_typing(array, 1, _fetch_add_codegen)
