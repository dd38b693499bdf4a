"""Owning a C object from Python: closed once, by close(), `with`, or the collector.

A closed handle raises fedc.Error (EINVAL) on use instead of passing C a freed
pointer, so no sequence of Python calls can crash the interpreter.
"""

import threading

from . import _lib
from .errors import EINVAL


class Handle:
    _destroy = None  # the C destructor's name, set by each subclass

    def __init__(self, ptr, what):
        self._ptr = ptr
        self._what = what
        self._handle_lock = threading.Lock()

    def _get(self):
        ptr = self._ptr
        if ptr is None:
            raise _lib.error(EINVAL, "%s is closed" % self._what)
        return ptr

    @property
    def closed(self):
        return self._ptr is None

    def close(self):
        """Frees the C object now; safe to call twice. Later use raises fedc.Error."""
        with self._handle_lock:
            ptr, self._ptr = self._ptr, None
        if ptr is not None and self._destroy:  # a borrowed handle has none
            getattr(_lib.lib, self._destroy)(ptr)

    def __enter__(self):
        self._get()
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the module may be half torn down
            pass
