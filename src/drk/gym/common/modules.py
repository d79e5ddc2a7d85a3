"""Where Triton keeps a native module it builds: the name of the launcher module and Triton's cache key, used
by the judge to place the launchers it builds and by the candidate process to find them."""
from __future__ import annotations

import hashlib
import sysconfig

LAUNCHER = "__triton_launcher"


def cache_key(src: str) -> str:
    """The name of the folder Triton's cache keeps a module built from `src` in
    (triton.runtime.build.compile_module_from_src): its file cache names a folder by the base32 of the
    source's hash, not the hex, and a lookup by the hex never finds a module Triton itself put there (the
    driver utilities the judge warms into the base cache)."""
    from triton.runtime.build import platform_key

    key = hashlib.sha256((src + platform_key()).encode("utf-8")).hexdigest()
    try:
        from triton.runtime.cache import _base32
    except ImportError:  # a Triton that names folders by the hex itself
        return key
    return _base32(key)


def judge_platform_key() -> str:
    """Triton's `platform_key()` as the judge computes it, where programs may run ('' without Triton): the
    fork server pins it for every candidate (`drk.gym.sandbox.zygote.pin_platform_key`), so the keys agree."""
    try:
        from triton.runtime.build import platform_key
    except ImportError:
        return ""
    return platform_key()


def module_file(name: str) -> str:
    return name + sysconfig.get_config_var("EXT_SUFFIX")
