# leaktrace: audit code language models for benchmark leakage and memorisation.
# `snakemake --cores N` runs what config/config.yaml asks for; see docs/ (make docs).

configfile: "config/config.yaml"


include: "rules/common.smk"
include: "rules/paths.smk"  # every artifact's path; before the rule files
include: "rules/models.smk"
include: "rules/cluster.smk"
include: "rules/inputs.smk"  # before every rule that reads a tracked input
include: "rules/counterfactual.smk"
include: "rules/identity.smk"
include: "rules/ingest.smk"
include: "rules/pretrain.smk"
include: "rules/variants.smk"
include: "rules/filter.smk"
include: "rules/train.smk"
include: "rules/score.smk"
include: "rules/dpdllm_veilprobe.smk"
include: "rules/aggregate.smk"
include: "rules/leakage.smk"
include: "rules/audit.smk"
include: "rules/contamination.smk"
include: "rules/calibration.smk"
include: "rules/twin.smk"
include: "rules/mutate.smk"
include: "rules/watermark.smk"
include: "rules/dose.smk"
include: "rules/verdict.smk"  # after every rule file: it reads get_final_output() as it is included


# Each job's SLURM partition, and cluster.one_job's group (rules/cluster.smk).
place_jobs()


# The report's opening text, for the kind of run it reports (leaktrace/run_kind.py): testbed, audit or experiment.
report: f"report/landing/{RUN_KIND}.rst"


# The image of every rule under `--sdm apptainer` (docs/guides/slurm.md): built from
# envs/leaktrace.def with `apptainer build leaktrace.sif envs/leaktrace.def`.
container: "leaktrace.sif"


rule all:
    input:
        VERDICT,  # verdict.md first: it needs every other final output
        get_final_output(),
    default_target: True
