"""Every setting autotune reads from the environment, in one place (Triton's ``knobs``).

Each :class:`Setting` names its variable, its default and what it sets. A setting is read at
each use (:meth:`Setting.get`), never cached at import, so a test's ``monkeypatch.setenv`` and a
program that sets the variable before its first launch are both seen. What a value means, and
its refusal of a bad one, stay with the module that uses it (named in each setting's doc); this
module only reads and writes the environment.

======================================  =========================================================
variable                                what it sets
======================================  =========================================================
``AUTOTUNE_DB``                         :data:`DB`
``AUTOTUNE_CACHE_DIR``                  :data:`CACHE_DIR`
``AUTOTUNE_BACKEND``                    :data:`BACKEND`
``AUTOTUNE_COMPILE_WORKERS``            :data:`COMPILE_WORKERS`
``AUTOTUNE_STRATEGIES``                 :data:`STRATEGIES`
``AUTOTUNE_LAUNCH_API``                 :data:`LAUNCH_API`
``AUTOTUNE_BUNDLE``                     :data:`BUNDLE`
``AUTOTUNE_BUNDLE_ALLOW``               :data:`BUNDLE_ALLOW`
``AUTOTUNE_RECORD``                     :data:`RECORD`
``AUTOTUNE_TUNE``                       :data:`TUNE`
``AUTOTUNE_SAME_ARCH_GUARD``            :data:`SAME_ARCH_GUARD`
======================================  =========================================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["Setting", "SETTINGS", "DB", "CACHE_DIR", "BACKEND", "COMPILE_WORKERS", "STRATEGIES", "LAUNCH_API",
           "BUNDLE", "BUNDLE_ALLOW", "RECORD", "TUNE", "SAME_ARCH_GUARD"]


@dataclass(frozen=True)
class Setting:
    """One environment variable autotune reads.

    Attributes:
        name: the variable (``AUTOTUNE_DB``).
        default: its value where it is unset (``""``: the using module's own default, said in
            ``doc``).
        doc: what it sets, and which module reads it.
    """

    name: str
    default: str
    doc: str

    def get(self) -> str:
        """The variable's value now, as set (not stripped), or :attr:`default` where unset."""
        return os.environ.get(self.name, self.default)

    def set(self, value: str) -> None:
        """Set the variable for this process and the processes it starts after."""
        os.environ[self.name] = value


DB = Setting("AUTOTUNE_DB", "", "the results database's URL, where no --db or url= is given (unset: the "
                                "platformdirs default; autotune.store.urls)")
CACHE_DIR = Setting("AUTOTUNE_CACHE_DIR", "", "the folder of cached cubins (unset: <user cache dir>/autotune/cubins; "
                                              "autotune.measure.cubin_cache)")
BACKEND = Setting("AUTOTUNE_BACKEND", "", "the measuring backend, cuda-bindings or pycuda (unset: the first installed; "
                                          "autotune.measure.backends); the measuring processes inherit it")
COMPILE_WORKERS = Setting("AUTOTUNE_COMPILE_WORKERS", "", "configs compiled at once ahead of the GPU, 0 for none "
                                                          "(unset: one per CPU; autotune.measure.pipeline)")
STRATEGIES = Setting("AUTOTUNE_STRATEGIES", "", "modules, comma-separated, imported when a strategy name is not "
                                                "registered (autotune.search.strategies.registry)")
LAUNCH_API = Setting("AUTOTUNE_LAUNCH_API", "", "how the runtime launches, ctypes or cuda.bindings (unset: "
                                                "cuda.bindings where it imports; autotune.runtime.packed)")
BUNDLE = Setting("AUTOTUNE_BUNDLE", "", "the deployment bundle (folder or file) every launch reads instead of the "
                                        "database (unset: none; autotune.runtime.bundle)")
BUNDLE_ALLOW = Setting("AUTOTUNE_BUNDLE_ALLOW", "", "same_arch: a bundle made on another GPU of the same "
                                                    "architecture is used (unset: refused; autotune.runtime.bundle)")
RECORD = Setting("AUTOTUNE_RECORD", "", "records the launches of a program you do not edit, under this name "
                                        "(unset: no recording; autotune.runtime.recording)")

TUNE = Setting("AUTOTUNE_TUNE", "", "tuning on first sight for every launcher of the process: off (none tunes, "
                                    "whatever its tune=) or a preset, quick (every launcher without a bundle tunes) "
                                    "(unset: each launcher's tune=; autotune.runtime.first_sight)")
SAME_ARCH_GUARD = Setting("AUTOTUNE_SAME_ARCH_GUARD", "on", "on: the first launch of each problem answered at the "
                                                            "same_arch rung times that config against the default "
                                                            "and keeps the faster; off: launches it untimed "
                                                            "(autotune.runtime.guard)")

SETTINGS: tuple[Setting, ...] = (DB, CACHE_DIR, BACKEND, COMPILE_WORKERS, STRATEGIES, LAUNCH_API, BUNDLE,
                                 BUNDLE_ALLOW, RECORD, TUNE, SAME_ARCH_GUARD)
"""Every setting, in the order of the module doc's table."""
