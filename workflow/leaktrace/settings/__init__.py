"""Each stage's settings class: the config keys it reads, registered with
its command (:func:`~leaktrace.config_slice.settings_of`). One module per
stage module; each imports only :mod:`leaktrace.config_slice`, so the plan
(the Snakefile) reads every declaration without loading a stage's libraries."""

from leaktrace.settings import twin, verdict  # noqa: F401  (each registers its classes)
