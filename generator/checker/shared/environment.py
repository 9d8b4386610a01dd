"""The one setup of torch and triton, for every path that runs kernels: the student's check.py
(every flag), the notebook's check, verification's job, the task server, a worker, bench.py.

Triton decides interpreter-or-compiler when @triton.jit decorates a function, and its own
`triton.language` helpers (tl.max, tl.sum, tl.softmax, ...) are decorated when triton is
imported: TRITON_INTERPRET must be set before `import triton`, or those helpers fail in the
interpreter ("Cannot call @triton.jit'd outside of the scope of a kernel")."""
import importlib
import importlib.util
import os
import platform
import sys

from .common import LESSON, msg


def missing_packages():
    """Names of the packages this checker needs that cannot be found (no import, so it is fast)."""
    return [name for name in ("torch", "triton") if importlib.util.find_spec(name) is None]


def platform_message(missing):
    where = f"{platform.system() or 'unknown'} {platform.machine()}".strip()
    return msg("no_triton", platform=where, missing=", ".join(missing), section=LESSON["platform_section"])


def gpu_visible(torch):
    """(a CUDA GPU is visible, this process may still fork children that use it). Asked through
    NVML, which starts nothing; where NVML cannot answer, torch asks the driver, and a process that
    asked the driver anything cannot fork children that use the GPU."""
    if not torch.backends.cuda.is_built():   # a CPU build of torch
        return False, True
    untouched = not torch.cuda.is_initialized()   # a notebook cell may have run a kernel already
    saved = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    try:
        count = getattr(torch.cuda, "_device_count_nvml", lambda: -1)()
    finally:
        if saved is None:
            os.environ.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
        else:
            os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = saved
    if count >= 0:
        return count > 0, untouched
    available = torch.cuda.is_available()   # asks the driver
    return available, untouched and not available


def triton_mode():
    """'interpreter' or 'compiler': how the imported triton built its own jit helpers; None if
    triton is not imported yet."""
    if "triton" not in sys.modules:
        return None
    import triton.language as tl
    return "interpreter" if type(tl.max).__name__ == "InterpretedFunction" else "compiler"


def prepare(force_interpreter=False, threads=None):
    """Import torch and triton for running kernels, in this order: torch; the choice of GPU or
    interpreter (a GPU when torch sees one and force_interpreter is false); TRITON_INTERPRET set
    or cleared to match; triton and what Triton imports on its first kernel call (its code
    generator, some fifty modules). Starts no CUDA. Returns a dict: use_gpu; forkable (children
    forked from this process may use the GPU and see the right triton); mode."""
    import gc
    gc.disable()   # no collection passes over the objects the import makes: a sixth of its time
    try:
        import torch
        if threads:
            torch.set_num_threads(threads)
        use_gpu, forkable = (False, True) if force_interpreter else gpu_visible(torch)
        wanted = "compiler" if use_gpu else "interpreter"
        if wanted == "interpreter":
            os.environ["TRITON_INTERPRET"] = "1"
        else:
            os.environ.pop("TRITON_INTERPRET", None)
        already = triton_mode()
        import triton
        try:
            importlib.import_module("triton.compiler.code_generator")
        except ImportError:
            pass
        if already is not None and already != wanted:
            forkable = False   # imported earlier the other way: a fresh process must run the kernels
        if not use_gpu:
            lean_interpreter()
        gc.freeze()    # nor later ones, here or in forked children (which then copy fewer pages)
    finally:
        gc.enable()
    return {"use_gpu": use_gpu, "forkable": forkable, "mode": wanted, "torch": torch.__version__,
            "triton": triton.__version__, "threads": thread_count()}


def thread_count():
    """This process's threads, native ones included (importing torch starts one of its own)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def lean_interpreter():
    """The Triton interpreter redoes every integer +, - and * of a kernel in 64 bits to check for
    overflow, then hands the check to device_assert, which drops it unless debug is on, and the
    interpreter's debug is off. That work, about half of a kernel's time in the interpreter,
    changes nothing: skip it. Only where this Triton's device_assert is seen to drop it."""
    try:
        import dataclasses
        import inspect
        from triton.runtime import interpreter
        builder = interpreter.interpreter_builder
        drops = "options.debug" in inspect.getsource(type(interpreter.interpreter_semantic).device_assert)
        if drops and not builder.options.debug and builder.options.sanitize_overflow:
            builder.options = dataclasses.replace(builder.options, sanitize_overflow=False)
    except Exception:   # another Triton: its interpreter as it is
        pass


def warm_compiler():
    """A process's first Triton compile also sets up what every later one reuses (its language's
    builtins read, ptxas asked its version ...): 0.26 CPU s on an H200 host, against 0.09 s warm.
    Done here, in the factory, on a tiny kernel of ours for the GPU that NVML reports (no CUDA
    starts), in a cache of its own that is then deleted: each worker forked afterwards starts warm."""
    capability = nvml_capability()
    if capability is None:
        return False
    import shutil
    import tempfile
    saved = os.environ.get("TRITON_CACHE_DIR")
    cache = tempfile.mkdtemp(prefix="coursepack-warm-")
    try:
        import triton
        import triton.language as tl
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource

        @triton.jit
        def warm(x_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) + 1, mask=offsets < n)

        os.environ["TRITON_CACHE_DIR"] = cache
        triton.compile(ASTSource(warm, {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, constexprs={"BLOCK": 128}),
                       target=GPUTarget("cuda", capability, 32))
        return True
    except Exception:   # another Triton, no source to read, no ptxas: each worker's first compile warms it
        return False
    finally:
        if saved is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = saved
        shutil.rmtree(cache, ignore_errors=True)


def nvml_capability():
    """The first GPU's compute capability as Triton writes it (90 for an H200), through NVML, which
    starts no CUDA; None where NVML cannot say."""
    def ask(nvml, ctypes):
        handle, major, minor = ctypes.c_void_p(), ctypes.c_int(), ctypes.c_int()
        if (nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) != 0 or
                nvml.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major), ctypes.byref(minor)) != 0):
            return None
        return major.value * 10 + minor.value
    return nvml_answer(ask)


def nvml_count():
    """How many GPUs NVML sees (all of the machine's: it ignores CUDA_VISIBLE_DEVICES); 0 where
    NVML cannot say."""
    def ask(nvml, ctypes):
        found = ctypes.c_uint()
        return found.value if nvml.nvmlDeviceGetCount_v2(ctypes.byref(found)) == 0 else 0
    return nvml_answer(ask) or 0


def nvml_answer(ask):
    """ask(nvml, ctypes) between NVML's start and its shutdown (NVML starts no CUDA context); None
    where there is no NVML or it lacks a call that ask makes."""
    import ctypes
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
        if nvml.nvmlInit_v2() != 0:
            return None
    except (OSError, AttributeError):
        return None
    try:
        return ask(nvml, ctypes)
    except AttributeError:
        return None
    finally:
        nvml.nvmlShutdown()


def warm_compile_key():
    """Triton hashes its own source files for its compile-cache keys, once per process (0.4 s on an
    H200 host). Computed in a parent (it starts no CUDA), every forked child inherits it."""
    try:
        from triton.runtime.cache import triton_key
        triton_key()
    except Exception:   # another Triton version: each child computes it
        pass
