"""Running work on the GPU with the CPU as the way out when the device runs out of memory."""

import sys
import warnings

_MEMORY_MESSAGES = ("out of memory", "cudaErrorMemoryAllocation", "ALLOC_FAILED")


class DeviceMemoryWarning(RuntimeWarning):
    """A fit ran out of GPU memory and was run again on the CPU.

    The result is the CPU run's, so it is correct; the warning says that the GPU did not
    help. Turn it into an error (``warnings.simplefilter("error", DeviceMemoryWarning)``)
    to stop instead of running again on the CPU.

    See Also
    --------
    call_with_cpu_fallback : What issues it.

    Examples
    --------
    >>> import warnings
    >>> from sklearn_ilargi.backend import DeviceMemoryWarning, call_with_cpu_fallback
    >>> class OutOfMemoryError(MemoryError):
    ...     __module__ = "cupy.cuda.memory"  # stands in for CuPy's own
    >>> def on_gpu():
    ...     raise OutOfMemoryError("out of memory")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", DeviceMemoryWarning)
    ...     try:
    ...         call_with_cpu_fallback(on_gpu, lambda: "CPU result")
    ...     except DeviceMemoryWarning as warning:
    ...         print(warning)
    The fit ran out of GPU memory (OutOfMemoryError: out of memory); running it again on the CPU.
    """


def is_device_out_of_memory(exc):
    """Whether ``exc`` is CuPy (or cuBLAS/cuSPARSE through it) failing to allocate memory.

    Decided by the exception's type and message, so that no CuPy import is needed.

    Parameters
    ----------
    exc : BaseException
        The error to classify.

    Returns
    -------
    bool
        True for CuPy's ``OutOfMemoryError`` and for CuPy errors whose message says that an
        allocation failed.

    Examples
    --------
    >>> from sklearn_ilargi.backend import is_device_out_of_memory
    >>> is_device_out_of_memory(MemoryError("out of memory"))  # a host error
    False
    >>> class OutOfMemoryError(MemoryError):
    ...     __module__ = "cupy.cuda.memory"  # stands in for CuPy's own
    >>> is_device_out_of_memory(OutOfMemoryError("out of memory allocating 8 bytes"))
    True
    """
    for klass in type(exc).__mro__:
        module = klass.__module__ or ""
        if klass.__name__ == "OutOfMemoryError" and module.startswith("cupy"):
            return True
    module = type(exc).__module__ or ""
    if not module.startswith(("cupy", "cupyx", "cupy_backends")):
        return False
    message = str(exc)
    return any(text in message for text in _MEMORY_MESSAGES)


def release_device_memory():
    """Hand CuPy's cached, unused blocks back to the device (no-op when CuPy is not loaded)."""
    if "cupy" not in sys.modules:
        return
    from ._registry import get_backend

    try:
        get_backend("gpu").release_memory()
    except RuntimeError:  # no usable device after all: nothing to release
        pass


def call_with_cpu_fallback(on_device, on_cpu, *, what="The fit", cleanup=None):
    """``on_device()``; if the GPU runs out of memory, warn and return ``on_cpu()``.

    Only a device out-of-memory error is caught; any other error propagates. Before the CPU
    run, ``cleanup`` (if given) drops what the device run left cached, and CuPy's memory pool
    is emptied.

    Parameters
    ----------
    on_device, on_cpu : callable
        Functions of no arguments that do the same work on the GPU and on the CPU.
    what : str, optional
        How the warning names the work.
    cleanup : callable, optional
        A function of no arguments run before ``on_cpu``, to drop what ``on_device`` left
        cached on the device.

    Returns
    -------
    object
        What the call that completed returned.

    Warns
    -----
    DeviceMemoryWarning
        When the CPU run replaced the GPU run.

    Examples
    --------
    >>> import warnings
    >>> from sklearn_ilargi.backend import DeviceMemoryWarning, call_with_cpu_fallback
    >>> class OutOfMemoryError(MemoryError):
    ...     __module__ = "cupy.cuda.memory"  # stands in for CuPy's own
    >>> def on_gpu():
    ...     raise OutOfMemoryError("out of memory allocating 8 bytes")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     call_with_cpu_fallback(on_gpu, lambda: "CPU result")
    'CPU result'
    >>> caught[0].category is DeviceMemoryWarning
    True
    >>> call_with_cpu_fallback(lambda: "GPU result", lambda: "CPU result")
    'GPU result'
    """
    try:
        return on_device()
    except Exception as exc:
        if not is_device_out_of_memory(exc):
            raise
        reason = f"{type(exc).__name__}: {exc}"
    if cleanup is not None:
        cleanup()
    release_device_memory()
    warnings.warn(
        f"{what} ran out of GPU memory ({reason}); running it again on the CPU.",
        DeviceMemoryWarning,
        stacklevel=2,
    )
    return on_cpu()
