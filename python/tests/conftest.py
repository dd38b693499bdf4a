"""pytest setup: the package from this source tree (run.sh sets PYTHONPATH too)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
