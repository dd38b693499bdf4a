"""pip install ./python: the fedc package (pure Python; it loads libfedc.so at import).

Works offline with Debian's python3-setuptools (no pyproject.toml, so pip builds
with the setuptools already installed instead of fetching one). libfedc.so itself
comes from `make install` or a build tree (FEDC_LIBRARY); see docs/python.md.
"""

from setuptools import setup

setup(
    name="fedc",
    version="0.1.0",
    description="Federated programs traced from Python, run by fedc's C runtime",
    packages=["fedc"],
    python_requires=">=3.8",
    install_requires=["numpy"],
)
