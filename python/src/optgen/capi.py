"""ctypes bindings of optgen's C ABI (runtime/capi/include/optgen/runtime/CApi.h).

A `Native` is one optimizer of a library `build.compile_spec` made: its
functions take names, data pointers, dtypes and shapes, and raise
`OptgenError` with the runtime's message when the C ABI returns an error.
Nothing here knows PyTorch's C++ side: tensors cross as their memory.
"""

from __future__ import annotations

import ctypes
import json
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_double,
                    c_int, c_int32, c_int64, c_void_p)
from typing import Callable, Sequence

# OPTGEN_CAPI_VERSION, which the library must report.
VERSION = 2

# The runtime's dtypes and devices, as CApi.h numbers them.
F32, BF16, F16, F64, I64 = 0, 1, 2, 3, 4
HOST, CUDA = 0, 1


class OptgenError(RuntimeError):
    """An error the runtime reported: the message names what is at fault."""


class Tensor(Structure):
    """optgen_tensor: a view of memory somebody else owns."""

    _fields_ = [("data", c_void_p), ("dtype", c_int32), ("device", c_int32),
                ("ndim", c_int32), ("shape", POINTER(c_int64))]

    @classmethod
    def of(cls, data: int, dtype: int, device: int,
           shape: Sequence[int]) -> "Tensor":
        extents = (c_int64 * max(len(shape), 1))(*shape)
        view = cls(data, dtype, device, len(shape),
                   ctypes.cast(extents, POINTER(c_int64)))
        view._extents = extents  # alive as long as the view
        return view


REQUEST = POINTER(c_void_p)
ALL_REDUCE = CFUNCTYPE(c_int, c_void_p, c_void_p, c_int64, c_int32, REQUEST)
REDUCE_SCATTER = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p,
                           POINTER(c_int64), c_int32, REQUEST)
ALL_GATHER = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, POINTER(c_int64),
                       c_int32, REQUEST)
WAIT = CFUNCTYPE(c_int, c_void_p, c_void_p)
LAST_ERROR = CFUNCTYPE(c_void_p, c_void_p)
ABORT = CFUNCTYPE(None, c_void_p, c_int32)


class Collectives(Structure):
    """optgen_collectives: the caller's collectives, as C callbacks."""

    _fields_ = [("context", c_void_p), ("rank", c_int32), ("size", c_int32),
                ("all_reduce_mean", ALL_REDUCE),
                ("reduce_scatter_mean", REDUCE_SCATTER),
                ("all_gather", ALL_GATHER), ("wait", WAIT),
                ("last_error", LAST_ERROR), ("abort", ABORT)]


def _declare(lib: ctypes.CDLL) -> None:
    handle, checkpoint = c_void_p, c_void_p
    tensor = POINTER(Tensor)
    signatures = {
        "optgen_capi_version": (c_int32, []),
        "optgen_last_error": (c_char_p, []),
        "optgen_optimizer_create": (c_int, [c_void_p, POINTER(handle)]),
        "optgen_optimizer_destroy": (None, [handle]),
        "optgen_spec_json": (c_int, [handle, POINTER(c_char_p)]),
        "optgen_add_group": (c_int, [handle, c_char_p, c_char_p]),
        "optgen_add_parameter": (c_int, [handle, c_char_p, tensor, tensor,
                                         c_char_p]),
        "optgen_set_collectives": (c_int, [handle, POINTER(Collectives)]),
        "optgen_skip_nonfinite": (c_int, [handle]),
        "optgen_finalize": (c_int, [handle]),
        "optgen_set_hyper": (c_int, [handle, c_char_p, c_char_p,
                                     POINTER(c_double), c_int64]),
        "optgen_check_hyper": (c_int, [handle, c_char_p, c_char_p,
                                       POINTER(c_double), c_int64]),
        "optgen_get_hyper": (c_int, [handle, c_char_p, c_char_p,
                                     POINTER(c_double), c_int64,
                                     POINTER(c_int64)]),
        "optgen_rebind": (c_int, [handle, c_char_p, tensor, tensor]),
        "optgen_step": (c_int, [handle]),
        "optgen_group_of": (c_int, [handle, c_char_p, POINTER(c_char_p)]),
        "optgen_step_count": (c_int, [handle, c_char_p, POINTER(c_int64)]),
        "optgen_skipped_steps": (c_int, [handle, POINTER(c_int64)]),
        "optgen_global_value": (c_int, [handle, c_char_p, POINTER(c_double)]),
        "optgen_state_bytes": (c_int, [handle, POINTER(c_int64)]),
        "optgen_describe_plan": (c_int, [handle, POINTER(c_char_p)]),
        "optgen_save_state": (c_int, [handle, c_char_p]),
        "optgen_load_state": (c_int, [handle, c_char_p]),
        "optgen_export_state": (c_int, [handle, POINTER(checkpoint)]),
        "optgen_import_state": (c_int, [handle, checkpoint, c_char_p]),
        "optgen_checkpoint_create": (checkpoint, []),
        "optgen_checkpoint_destroy": (None, [checkpoint]),
        "optgen_checkpoint_metadata": (c_int, [checkpoint, POINTER(c_char_p)]),
        "optgen_checkpoint_set_metadata": (c_int, [checkpoint, c_char_p]),
        "optgen_checkpoint_tensor_count": (c_int64, [checkpoint]),
        "optgen_checkpoint_tensor": (c_int, [checkpoint, c_int64,
                                             POINTER(c_char_p), tensor]),
        "optgen_checkpoint_add_tensor": (c_int, [checkpoint, c_char_p, tensor]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes


_libraries: dict[str, ctypes.CDLL] = {}


def load(path: str) -> ctypes.CDLL:
    """The library at `path`, loaded once per process, its ABI checked."""
    if path not in _libraries:
        lib = ctypes.CDLL(path)
        _declare(lib)
        version = lib.optgen_capi_version()
        if version != VERSION:
            raise OptgenError(f"'{path}' has optgen's C ABI version {version}; "
                              f"this package speaks version {VERSION}")
        _libraries[path] = lib
    return _libraries[path]


def _encode(text: str, what: str = "a name") -> bytes:
    """`text` as the C ABI's strings carry it: one with a NUL would be cut
    there (two names would become one)."""
    if "\0" in text:
        raise ValueError(f"{what} {text!r} holds a NUL character, which a C "
                         "string cannot carry")
    return text.encode()


class Native:
    """One optimizer of a compiled spec, through the C ABI."""

    def __init__(self, lib: ctypes.CDLL, factory: str):
        self._lib = lib
        self._handle = c_void_p()
        self._check(lib.optgen_optimizer_create(
            ctypes.cast(getattr(lib, factory), c_void_p), byref(self._handle)))

    def __del__(self):
        if getattr(self, "_handle", None):
            self._lib.optgen_optimizer_destroy(self._handle)
            self._handle = None

    def _check(self, status: int) -> None:
        if status != 0:
            raise OptgenError(self._lib.optgen_last_error().decode())

    def _string(self, function, *args) -> str:
        text = c_char_p()
        self._check(function(self._handle, *args, byref(text)))
        return text.value.decode()

    def spec(self) -> dict:
        """The spec's rules and groups (CApi.h, optgen_spec_json)."""
        return json.loads(self._string(self._lib.optgen_spec_json))

    def add_group(self, name: str, rule: str) -> None:
        self._check(self._lib.optgen_add_group(self._handle, _encode(name),
                                               _encode(rule)))

    def add_parameter(self, name: str, param: Tensor, grad: Tensor,
                      group: str | None = None) -> None:
        self._check(self._lib.optgen_add_parameter(
            self._handle, _encode(name), byref(param), byref(grad),
            _encode(group) if group else None))

    def set_collectives(self, collectives: Collectives) -> None:
        self._check(self._lib.optgen_set_collectives(self._handle,
                                                     byref(collectives)))

    def skip_nonfinite(self) -> None:
        self._check(self._lib.optgen_skip_nonfinite(self._handle))

    def finalize(self) -> None:
        self._check(self._lib.optgen_finalize(self._handle))

    def set_hyper(self, group: str, name: str, values: Sequence[float]) -> None:
        array = (c_double * max(len(values), 1))(*values)
        self._check(self._lib.optgen_set_hyper(
            self._handle, _encode(group), _encode(name), array, len(values)))

    def check_hyper(self, group: str, name: str,
                    values: Sequence[float]) -> None:
        """OptgenError where set_hyper would refuse `values`; changes
        nothing."""
        array = (c_double * max(len(values), 1))(*values)
        self._check(self._lib.optgen_check_hyper(
            self._handle, _encode(group), _encode(name), array, len(values)))

    def hyper(self, group: str, name: str) -> list[float]:
        values, count = (c_double * 16)(), c_int64()
        self._check(self._lib.optgen_get_hyper(
            self._handle, _encode(group), _encode(name), values, 16,
            byref(count)))
        if count.value > 16:
            values = (c_double * count.value)()
            self._check(self._lib.optgen_get_hyper(
                self._handle, _encode(group), _encode(name), values,
                count.value, byref(count)))
        return list(values[: count.value])

    def rebind(self, name: str, param: Tensor, grad: Tensor) -> None:
        self._check(self._lib.optgen_rebind(self._handle, _encode(name),
                                            byref(param), byref(grad)))

    def step(self) -> None:
        self._check(self._lib.optgen_step(self._handle))

    def group_of(self, param: str) -> str:
        return self._string(self._lib.optgen_group_of, _encode(param))

    def step_count(self, param: str) -> int:
        steps = c_int64()
        self._check(self._lib.optgen_step_count(self._handle, _encode(param),
                                                byref(steps)))
        return steps.value

    def skipped_steps(self) -> int:
        steps = c_int64()
        self._check(self._lib.optgen_skipped_steps(self._handle, byref(steps)))
        return steps.value

    def global_value(self, name: str) -> float:
        value = c_double()
        self._check(self._lib.optgen_global_value(self._handle, _encode(name),
                                                  byref(value)))
        return value.value

    def state_bytes(self) -> int:
        count = c_int64()
        self._check(self._lib.optgen_state_bytes(self._handle, byref(count)))
        return count.value

    def describe_plan(self) -> str:
        return self._string(self._lib.optgen_describe_plan)

    def save_state(self, path: str) -> None:
        self._check(self._lib.optgen_save_state(self._handle,
                                                _encode(path, "the path")))

    def load_state(self, path: str) -> None:
        self._check(self._lib.optgen_load_state(self._handle,
                                                _encode(path, "the path")))

    def export_state(self, copy: Callable[[int, int, tuple], object]
                     ) -> tuple[dict[str, str], dict[str, object]]:
        """The state (all of it, on every rank): its metadata, and per
        tensor name what `copy(data pointer, dtype, shape)` makes of the
        tensor (its memory is the runtime's until this returns)."""
        checkpoint = c_void_p()
        self._check(self._lib.optgen_export_state(self._handle,
                                                  byref(checkpoint)))
        try:
            text = c_char_p()
            self._check(self._lib.optgen_checkpoint_metadata(checkpoint,
                                                             byref(text)))
            metadata = json.loads(text.value.decode())
            tensors = {}
            count = self._lib.optgen_checkpoint_tensor_count(checkpoint)
            for index in range(count):
                name, view = c_char_p(), Tensor()
                self._check(self._lib.optgen_checkpoint_tensor(
                    checkpoint, index, byref(name), byref(view)))
                tensors[name.value.decode()] = copy(
                    view.data, view.dtype, tuple(view.shape[: view.ndim]))
            return metadata, tensors
        finally:
            self._lib.optgen_checkpoint_destroy(checkpoint)

    def import_state(self, metadata: dict[str, str],
                     tensors: dict[str, Tensor], source: str) -> None:
        """Takes a state back: the views must stay valid during the call."""
        checkpoint = self._lib.optgen_checkpoint_create()
        try:
            self._check(self._lib.optgen_checkpoint_set_metadata(
                checkpoint, _encode(json.dumps(metadata), "the metadata")))
            for name, view in tensors.items():
                self._check(self._lib.optgen_checkpoint_add_tensor(
                    checkpoint, _encode(name), byref(view)))
            self._check(self._lib.optgen_import_state(
                self._handle, checkpoint, _encode(source)))
        finally:
            self._lib.optgen_checkpoint_destroy(checkpoint)
