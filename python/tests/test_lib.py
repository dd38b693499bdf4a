"""Loading libfedc.so, fedc.Error, and handles' lifetimes."""

import os
import subprocess
import sys

import numpy as np
import pytest

import fedc

PROGRAM = """fedc program
%0 = input "x" : f32[2]
%1 = exp(%0) : f32[2]
output "y" = %1
"""


def test_library_found():
    assert os.path.exists(fedc.library_path)
    assert fedc.library_path.endswith(".so") or ".so." in fedc.library_path


def test_bad_library_path_is_an_import_error():
    env = dict(os.environ, FEDC_LIBRARY="/nonexistent/libfedc.so")
    r = subprocess.run([sys.executable, "-c", "import fedc"], env=env, capture_output=True,
                       text=True)
    assert r.returncode != 0
    assert "cannot load libfedc.so" in r.stderr and "/nonexistent/libfedc.so" in r.stderr


def test_error_carries_status_and_message():
    with pytest.raises(fedc.Error) as e:
        fedc.parse("fedc program\n%0 = input \"x\" : f33[2]\n")
    assert e.value.status == fedc.EPARSE == 5
    assert e.value.status_name == "EPARSE"
    assert "line 2" in e.value.message
    assert str(e.value).startswith("EPARSE: line 2")
    assert isinstance(e.value, Exception)


def test_close_is_idempotent_and_use_after_close_raises():
    p = fedc.parse(PROGRAM)
    assert p.run(x=np.zeros(2, np.float32))["y"].tolist() == [1.0, 1.0]
    p.close()
    p.close()
    assert p.closed
    for use in (p.text, lambda: p.run(x=np.zeros(2, np.float32)), lambda: p.inputs, p.clone):
        with pytest.raises(fedc.Error) as e:
            use()
        assert e.value.status == fedc.EINVAL and "closed" in e.value.message


def test_context_manager_closes():
    with fedc.parse(PROGRAM) as p:
        assert len(p) == 2
    assert p.closed
    with pytest.raises(fedc.Error):
        with p:
            pass


def test_close_while_executors_are_pooled():
    p = fedc.parse(PROGRAM)
    p.run(x=np.ones(2, np.float32))
    assert sum(len(v) for v in p._idle.values()) == 1
    p.close()
    assert p._idle == {}


def test_collected_handles_free_their_programs():
    import gc
    import weakref
    p = fedc.parse(PROGRAM)
    r = weakref.ref(p)
    del p
    gc.collect()
    assert r() is None
