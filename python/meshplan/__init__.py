"""meshplan: plan tensor programs for emulated Tenstorrent chips and meshes, and run them.

    import meshplan, numpy as np
    plan = meshplan.compile("model.json", device="wormhole_b0", policy="greedy")
    exe = plan.bind()
    outputs = exe.run({"x": np.ones((64, 256), np.float32), ...})
"""
from ._meshplan import Error, Executable, Plan, PlanCache, backends, compile, __version__

__all__ = ["Error", "Executable", "Plan", "PlanCache", "backends", "compile", "__version__"]
