"""meshplan-server with the Python client: NumPy arrays in, NumPy arrays out, against a local
run of the same plan (bit-identical: the same emulated chip) and against NumPy."""
import os
import pathlib
import subprocess
import time

import numpy as np
import pytest

import meshplan
from conftest import affine_expected, affine_inputs
from meshplan.client import Client, ServerError

BINARY_DIR = os.environ.get("MESHPLAN_BINARY_DIR")
SERVER = pathlib.Path(BINARY_DIR or ".") / "examples" / "meshplan-server"

# Run by CTest with MESHPLAN_BINARY_DIR set (then a missing server fails the tests).
pytestmark = pytest.mark.skipif(
    BINARY_DIR is None, reason="MESHPLAN_BINARY_DIR (the build folder) is not set"
)


@pytest.fixture
def served(tmp_path, affine_path):
    """A cache holding the affine plan, served on a free loopback port with TCP admin requests
    allowed; yields (port, plan, start-up log, cache path)."""
    plan = meshplan.compile(affine_path, policy="greedy")
    cache = tmp_path / "plans.mpc"
    plan.save(str(cache))
    proc = subprocess.Popen(
        [str(SERVER), str(cache), "--port", "0", "--threads", "2", "--remote-admin"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    port, log = None, []
    deadline = time.monotonic() + 60
    while port is None and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        log.append(line)
        if line.startswith("listening on 127.0.0.1:"):
            port = int(line.rsplit(":", 1)[1])
    if port is None:
        proc.kill()
        pytest.fail("meshplan-server did not start:\n" + "".join(log))
    yield port, plan, log, cache
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def test_server_returns_the_tensors_a_local_run_computes(served):
    port, plan, log, _ = served
    assert any("warm-up" in line for line in log)
    inputs = affine_inputs(3)
    local = plan.bind().run(inputs)
    with Client(port) as server:
        assert server.list() == ["affine"]
        out = server.run("affine", inputs)
        assert list(out) == ["y"]
        y = out["y"]
        assert y.dtype == np.float32 and y.shape == (32, 32)
        np.testing.assert_array_equal(y, local["y"])
        np.testing.assert_allclose(y, affine_expected(inputs), rtol=1e-4, atol=1e-4)
        assert float(server.last["device_us"]) > 0
        # Inputs as a list, in plan order, give the same answer; float64 arrays are sent as f32.
        as_list = server.run("affine", [inputs["x"].astype(np.float64), inputs["w"], inputs["b"]])
        np.testing.assert_array_equal(as_list["y"], y)


def test_server_errors_are_exceptions_and_the_session_goes_on(served):
    port, _, _, _ = served
    inputs = affine_inputs(4)
    with Client(port) as server:
        with pytest.raises(ServerError) as e:
            server.run("nope", inputs)
        assert e.value.code == "not_found"
        bad = dict(inputs, x=np.zeros((3, 3), np.float32))
        with pytest.raises(ServerError) as e:
            server.run("affine", bad)
        assert e.value.code == "invalid_argument"
        assert "'x'" in e.value.message and "[32x64]" in e.value.message
        with pytest.raises(ServerError, match="no --input for input 'b'"):
            server.run("affine", {"x": inputs["x"], "w": inputs["w"]})
        # Still serving after the errors; seeded random inputs need no tensors from the client.
        out = server.run("affine", seed=7, check=True)
        assert out["y"].shape == (32, 32)
        assert float(server.last["rel_err"]) <= 0.03


def test_server_reload_serves_a_plan_saved_after_start_up(served):
    port, plan, _, cache = served
    inputs = affine_inputs(5)
    with Client(port) as server:
        assert server.list() == ["affine"]
        plan.save(str(cache), "affine2")  # a second entry, written while the server runs
        assert server.list() == ["affine"]
        fields = server.reload()
        assert fields["plans"] == "2" and fields["bound"] == "2"
        assert server.list() == ["affine", "affine2"]
        np.testing.assert_array_equal(
            server.run("affine2", inputs)["y"], plan.bind().run(inputs)["y"]
        )
        os.remove(cache)
        with pytest.raises(ServerError) as e:
            server.reload()
        assert e.value.code == "not_found" and str(cache) in e.value.message
        assert server.list() == ["affine", "affine2"]  # the old plans are still served
