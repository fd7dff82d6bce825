"""meshplan's Python module: compile, caches, runs against NumPy, errors and threads."""
import threading

import numpy as np
import pytest

import meshplan
from conftest import affine_expected, affine_inputs


def test_compile_from_path_and_from_text_give_the_same_plan(affine_path):
    from_path = meshplan.compile(affine_path, device="wormhole_b0", policy="greedy")
    with open(affine_path) as f:
        from_text = meshplan.compile(f.read(), device="wormhole_b0", policy="greedy")
    assert from_path.key == from_text.key
    assert len(from_path.key) == 32
    assert from_path.name == "affine"
    assert from_path.policy == "greedy"
    assert from_path.device == "wormhole_b0"
    assert not from_path.is_mesh
    assert from_path.estimated_ns > 0
    # Another policy is another plan.
    assert meshplan.compile(affine_path, policy="dram").key != from_path.key


def test_run_matches_numpy(affine_path):
    exe = meshplan.compile(affine_path, policy="greedy").bind()
    assert exe.inputs == [("x", (32, 64)), ("w", (64, 32)), ("b", (1, 32))]
    assert exe.outputs == [("y", (32, 32))]
    inputs = affine_inputs(1)
    out = exe.run(inputs)
    assert list(out) == ["y"]
    y = out["y"]
    assert y.dtype == np.float32 and y.shape == (32, 32)
    np.testing.assert_allclose(y, affine_expected(inputs), rtol=1e-4, atol=1e-4)
    assert exe.last_device_ns > 0
    # The output array views meshplan's buffer (no copy): NumPy does not own the data.
    assert not y.flags.owndata


def test_other_dtypes_are_converted(affine_path):
    exe = meshplan.compile(affine_path).bind("wormhole_b0")
    for dtype in (np.float16, np.float64):
        inputs = affine_inputs(2, dtype)
        np.testing.assert_allclose(exe.run(inputs)["y"], affine_expected(inputs), rtol=1e-3, atol=1e-3)
    # Non-contiguous float32 views are read correctly too.
    inputs = affine_inputs(3)
    wide = np.zeros((64, 64), np.float32)
    wide[:, ::2] = inputs["w"]
    inputs["w"] = wide[:, ::2]
    np.testing.assert_allclose(exe.run(inputs)["y"], affine_expected(inputs), rtol=1e-4, atol=1e-4)


def test_cache_save_find_by_name_and_key(affine_path, tmp_path):
    cache_path = str(tmp_path / "plans.mpc")
    plan = meshplan.compile(affine_path, policy="greedy")
    plan.save(cache_path)
    meshplan.compile(affine_path, policy="dram").save(cache_path, name="affine_dram")
    cache = meshplan.PlanCache(cache_path)
    assert len(cache) == 2
    assert sorted(cache.names()) == ["affine", "affine_dram"]
    assert "affine" in cache and "nothing" not in cache
    by_name = cache.find("affine")
    by_key = cache.find(plan.key)
    assert by_name.key == by_key.key == plan.key
    assert cache.find("affine_dram").policy == "dram"
    inputs = affine_inputs(4)
    # The plan keeps the cache mapped after the cache object is gone.
    del cache
    np.testing.assert_allclose(by_key.bind().run(inputs)["y"], affine_expected(inputs), rtol=1e-4, atol=1e-4)
    assert plan.to_bytes() == by_name.to_bytes()


def test_errors_carry_meshplans_message(affine_path, tmp_path):
    with pytest.raises(meshplan.Error) as e:
        meshplan.compile('{ "name": "g", "arguments": [], "ops": [{ "kind": "frobnicate" }] }')
    assert "frobnicate" in str(e.value)
    with pytest.raises(meshplan.Error) as e:
        meshplan.PlanCache(str(tmp_path / "missing.mpc"))
    assert "missing.mpc" in str(e.value)
    assert e.value.code in ("not_found", "io")
    with pytest.raises(meshplan.Error) as e:
        meshplan.compile(affine_path, policy="fastest")
    assert "fastest" in str(e.value)
    with pytest.raises(meshplan.Error) as e:
        meshplan.compile(affine_path, device="no_such_chip")
    assert "no_such_chip" in str(e.value)
    exe = meshplan.compile(affine_path).bind()
    inputs = affine_inputs(5)
    inputs["x"] = inputs["x"][:16]
    with pytest.raises(meshplan.Error) as e:
        exe.run(inputs)
    assert "'x'" in str(e.value) and e.value.code == "invalid_argument"
    inputs = affine_inputs(5)
    inputs["z"] = inputs.pop("x")
    with pytest.raises(meshplan.Error) as e:
        exe.run(inputs)
    assert "'z'" in str(e.value)
    with pytest.raises(meshplan.Error):
        exe.run({"x": "not an array", "w": inputs["w"], "b": inputs["b"]})
    cache_path = str(tmp_path / "one.mpc")
    meshplan.compile(affine_path).save(cache_path)
    with pytest.raises(meshplan.Error) as e:
        meshplan.PlanCache(cache_path).find("other")
    assert "other" in str(e.value) and e.value.code == "not_found"
    assert issubclass(meshplan.Error, RuntimeError)


def test_bind_opens_the_named_backend(affine_path):
    assert "emulator" in meshplan.backends()
    plan = meshplan.compile(affine_path, policy="greedy")
    inputs = affine_inputs(6)
    exe = plan.bind(backend="emulator")
    np.testing.assert_allclose(exe.run(inputs)["y"], affine_expected(inputs), rtol=1e-4, atol=1e-4)
    with pytest.raises(meshplan.Error) as e:
        plan.bind(backend="tt-hardware")
    assert e.value.code == "not_found"
    assert "'tt-hardware'" in str(e.value) and "emulator" in str(e.value)


def test_threads_share_and_own_executables(affine_path):
    plan = meshplan.compile(affine_path, policy="greedy")
    shared = plan.bind()
    failures = []

    def work(seed):
        own = plan.bind()
        try:
            for i in range(3):
                inputs = affine_inputs(seed * 10 + i)
                want = affine_expected(inputs)
                for exe in (own, shared):
                    np.testing.assert_allclose(exe.run(inputs)["y"], want, rtol=1e-4, atol=1e-4)
        except Exception as e:  # collected: pytest sees only the main thread's failures
            failures.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_version():
    assert meshplan.__version__.count(".") == 2


def test_weight_dtype_quantizes_the_weight_within_the_bfp8_bound(affine_path):
    as_given = meshplan.compile(affine_path, policy="greedy")
    assert meshplan.compile(affine_path, policy="greedy", weight_dtype="bf16").key == as_given.key
    bfp8 = meshplan.compile(affine_path, policy="greedy", weight_dtype="bfp8_b")
    assert bfp8.key != as_given.key
    with pytest.raises(Exception, match="fp8"):
        meshplan.compile(affine_path, weight_dtype="fp8")
    with pytest.raises(Exception, match="nothing=bfp4_b"):
        meshplan.compile(affine_path, weight_dtype_overrides=["nothing=bfp4_b"])
    inputs = affine_inputs(2)
    x, w = (inputs[k].astype(np.float32) for k in ("x", "w"))
    x = x.astype(np.float64)
    want = affine_expected(inputs)
    err16 = np.abs(as_given.bind().run(inputs)["y"] - want)
    err8 = np.abs(bfp8.bind().run(inputs)["y"] - want)
    assert err8.max() > err16.max()  # the device computes with the quantized weight
    # bfloat8_b shares one exponent per 16 consecutive columns of a row: |dw| <= 2^-6 * the
    # group's largest |w|. x is rounded to bf16 (2^-9 |x|), the result too (2^-9 |y|).
    group_max = np.repeat(np.abs(w).reshape(64, 2, 16).max(axis=2), 16, axis=1)
    bound = np.abs(x) @ (group_max * 2.0**-6 + np.abs(w) * 2.0**-8) + np.abs(want) * 2.0**-8
    assert (err8 <= bound + 1e-3).all()
