import os
import pathlib

import numpy as np
import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("MESHPLAN_SOURCE_DIR", pathlib.Path(__file__).parents[2]))
AFFINE = SOURCE_DIR / "tests" / "package" / "affine.json"


@pytest.fixture
def affine_path():
    return str(AFFINE)


def affine_inputs(seed=0, dtype=np.float32):
    """x [32, 64], w [64, 32], b [1, 32] for the affine test graph (y = x @ w + b)."""
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((32, 64)).astype(dtype),
        "w": rng.standard_normal((64, 32)).astype(dtype),
        "b": rng.standard_normal((1, 32)).astype(dtype),
    }


def affine_expected(inputs):
    """y computed by NumPy in float64 from the inputs as given."""
    x, w, b = (inputs[k].astype(np.float64) for k in ("x", "w", "b"))
    return x @ w + b
