"""Where Triton keeps a native module it builds: the name of the launcher module and Triton's cache key, used
by the judge to place the launchers it builds and by the candidate process to find them."""
from __future__ import annotations

import hashlib
import sysconfig

LAUNCHER = "__triton_launcher"


def cache_key(src: str) -> str:
    """Triton's cache key for a module built from `src` (triton.runtime.build.compile_module_from_src)."""
    from triton.runtime.build import platform_key

    return hashlib.sha256((src + platform_key()).encode("utf-8")).hexdigest()


def module_file(name: str) -> str:
    return name + sysconfig.get_config_var("EXT_SUFFIX")
