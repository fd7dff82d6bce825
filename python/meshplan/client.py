"""A client for meshplan-server: sends NumPy arrays, gets NumPy arrays back.

    from meshplan.client import Client
    with Client(port) as server:                 # meshplan-server CACHE.mpc --port P
        outputs = server.run("mlp", {"x": x})   # {output name: float32 array}

The wire format is meshplan-server's line protocol (examples/server/protocol.hpp): one request
line `run NAME --input=INPUT=SHAPExf32=base64:DATA ... tensors`, where DATA is the base64 of
the array's C-order little-endian float32 bytes, and one reply line carrying each output as
`name0=NAME tensor0=SHAPExf32=base64:DATA`. Only the standard library and NumPy are used.
"""
import base64
import socket

import numpy as np

__all__ = ["Client", "ServerError"]


class ServerError(Exception):
    """The server answered `error #ID CODE: MESSAGE`; `code` is meshplan's error code name."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _shape_text(shape):
    return "x".join(str(d) for d in shape) + ("x" if shape else "") + "f32"


def _tensor_field(array):
    a = np.ascontiguousarray(array, dtype="<f4")
    return _shape_text(a.shape) + "=base64:" + base64.b64encode(a.tobytes()).decode("ascii")


def _parse_tensor(text):
    spec, _, data = text.partition("=base64:")
    dims = spec.split("x")[:-1]
    shape = tuple(int(d) for d in dims)
    raw = base64.b64decode(data, validate=True)
    return np.frombuffer(raw, dtype="<f4").reshape(shape).astype(np.float32, copy=False)


def _unescape_name(text):
    return text.replace("%20", " ").replace("%3D", "=").replace("%25", "%")


class Client:
    """One TCP session with a meshplan-server on 127.0.0.1 (or `host`). Requests are sent one
    at a time; a client that wants parallelism opens several sessions. Not thread-safe."""

    def __init__(self, port, host="127.0.0.1", timeout=60.0):
        self._sock = socket.create_connection((host, port), timeout=timeout)
        self._file = self._sock.makefile("rb")
        self._next_id = 0
        self.last = {}  # key=value fields of the latest reply (device_us, host_us, digests, ...)

    def close(self):
        self._file.close()
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _request(self, line):
        request_id = self._next_id
        self._next_id += 1
        self._sock.sendall(line.encode("ascii") + b"\n")
        reply = self._file.readline()
        if not reply:
            raise ConnectionError("meshplan-server closed the connection")
        reply = reply.decode("ascii").rstrip("\r\n")
        head, _, rest = reply.partition(" ")
        tag, _, rest = rest.partition(" ")
        if tag != f"#{request_id}":
            raise ConnectionError(f"reply {tag} to request #{request_id}: {reply[:200]}")
        if head == "error":
            code, _, message = rest.partition(": ")
            raise ServerError(code, message)
        return rest

    def list(self):
        """Names of the plans the server serves."""
        words = self._request("list").split(" ")
        return words[1:]

    def reload(self):
        """Asks the server to load its cache file again and serve the new plans (an admin
        request: the server must run with --remote-admin). Returns the reply's fields
        ({"plans": "2", "bound": "2", "ms": ...}, as text); a failed reload raises ServerError
        and the server keeps serving its old plans."""
        fields = {}
        for word in self._request("reload").split(" ")[1:]:
            key, eq, value = word.partition("=")
            if eq:
                fields[key] = value
        return fields

    def run(self, name, inputs=None, seed=None, check=False):
        """Runs plan `name` with `inputs` ({input name: array} or [array, ...] in plan order;
        any real dtype, sent as float32), or with the server's seeded random inputs when None.
        Returns {output name: float32 array}."""
        words = ["run", name]
        if inputs is not None:
            items = inputs.items() if isinstance(inputs, dict) else enumerate(inputs)
            for key, array in items:
                prefix = f"{key}=" if isinstance(inputs, dict) else ""
                words.append(f"--input={prefix}{_tensor_field(array)}")
        if seed is not None:
            words += ["random", str(int(seed))]
        if check:
            words.append("check")
        words.append("tensors")
        rest = self._request(" ".join(words))
        fields = {}
        for word in rest.split(" ")[1:]:
            key, eq, value = word.partition("=")
            if eq:
                fields[key] = value
        outputs = {}
        for i in range(int(fields["outputs"])):
            outputs[_unescape_name(fields[f"name{i}"])] = _parse_tensor(fields.pop(f"tensor{i}"))
        self.last = fields
        return outputs
