"""Each stage's settings class: the config keys it reads, registered with
its command (:func:`~leaktrace.config_slice.settings_of`). One module per
stage module; each imports only :mod:`leaktrace.config_slice` (and other
settings modules), so the plan (the Snakefile) reads every declaration
without loading a stage's libraries. Importing the package registers them all."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
