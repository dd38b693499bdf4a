"""pip install ./python works offline (Debian's setuptools, no build isolation)."""

import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def test_pip_install_offline(tmp_path):
    try:
        import pip  # noqa: F401
        import venv  # noqa: F401
        import ensurepip  # noqa: F401
    except ImportError:
        pytest.skip("no pip/venv for this python3")
    src = tmp_path / "src"
    shutil.copytree(os.path.join(HERE, ".."), src, ignore=shutil.ignore_patterns(
        "tests", "build", "*.egg-info", "__pycache__"))
    env_dir = tmp_path / "venv"
    r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("python3 -m venv failed: " + r.stderr[-200:])
    py = str(env_dir / "bin" / "python")
    r = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-cache-dir", str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    import fedc
    env = dict(os.environ, FEDC_LIBRARY=fedc.library_path)
    env.pop("PYTHONPATH", None)
    code = ("import fedc, numpy as np; assert 'site-packages' in fedc.__file__;"
            "print(fedc.program(lambda x: x * 2)(np.float32(3)))")
    r = subprocess.run([py, "-c", code], capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "6.0"
