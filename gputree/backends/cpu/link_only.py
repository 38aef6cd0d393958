"""numba compiles of helpers that LLVM inlines into every caller, kept to
their IR: no optimisation of their own module and no machine code.

numba finalizes every compiled function: module-level O3 (twice: a cheap
pass, then the full one) and machine code, though a ``forceinline`` helper
called only by other numba functions never runs its own machine code: each
caller links the helper's IR in, inlines it and optimises the result
itself. :func:`link_only_pipeline` gives numba's ``jit(pipeline_class=...)``
a pipeline whose lowering keeps the helper's library as IR for linking
(function-level passes only); its callers compile exactly what they
compiled before, from less optimised IR (the same operations: no fast-math
anywhere). About a fifth of a first fit's compile seconds were the
helpers' own optimisation and machine code.

A helper compiled this way cannot be called from Python (it has no wrapper
and no machine code). None (numba's own pipeline) where numba's internals
differ from what this module expects.
"""


def link_only_pipeline():
    """A numba CompilerBase subclass for LLVM-inlined helpers, or None."""
    try:
        return _make_pipeline()
    except (ImportError, AttributeError, TypeError):     # another numba: its own pipeline
        return None


def _make_pipeline():
    from numba import _dynfunc
    from numba.core import codegen, compiler, typed_passes
    from numba.core.compiler_machinery import register_pass

    base_library = codegen.JITCodeLibrary
    for name in ("_optimize_final_module", "_finalize_final_module",
                 "_finalize_dynamic_globals", "_verify_declare_only_symbols"):
        getattr(base_library, name)

    class LinkOnlyLibrary(base_library):
        """A finalized library that only other libraries link in."""

        def _optimize_final_module(self):
            """Optimised where it is inlined."""

        def _finalize_final_module(self):
            self._finalize_dynamic_globals()
            self._verify_declare_only_symbols()
            self._finalized = True

        def get_pointer_to_function(self, name):
            self._ensure_finalized()
            return 0

    @register_pass(mutates_CFG=True, analysis_only=False)
    class LinkOnlyLowering(typed_passes.NativeLowering):
        """numba's lowering into a LinkOnlyLibrary, with an executable
        that has no machine code (numba's would look up the function's
        environment in the JIT engine, which never holds the module)."""
        _name = "gputree_link_only_lowering"

        def run_pass(self, state):
            context = state.targetctx
            library = context.codegen().create_library(state.func_id.func_qualname)
            library.__class__ = LinkOnlyLibrary
            state.library = library
            original = type(context).get_executable
            previous = context.__dict__.get("get_executable")

            def get_executable(lib, fndesc, env):
                if lib is not library:
                    return (previous or original.__get__(context))(lib, fndesc, env)
                lib._ensure_finalized()
                return _dynfunc.make_function(fndesc.lookup_module(),
                                              fndesc.qualname.split(".")[-1],
                                              "link-only %r" % (fndesc.qualname,), 0, env,
                                              (lib,))

            context.get_executable = get_executable
            try:
                return super().run_pass(state)
            finally:
                if previous is None:
                    del context.get_executable
                else:
                    context.get_executable = previous

    class LinkOnlyCompiler(compiler.CompilerBase):
        def define_pipelines(self):
            pm = compiler.DefaultPassBuilder.define_nopython_pipeline(self.state)
            found = [i for i, (p, _) in enumerate(pm.passes) if p is typed_passes.NativeLowering]
            if len(found) != 1:
                raise TypeError("numba's nopython pipeline has no single NativeLowering")
            pm.passes[found[0]] = (LinkOnlyLowering, "lowering kept as IR for linking")
            pm.finalize()
            return [pm]

    return LinkOnlyCompiler
