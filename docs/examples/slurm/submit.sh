#!/bin/bash
# Submits a study to Slurm: the scenarios first (every shard must run the
# same set), then the array of shards (study.sbatch), then the merge, which
# starts when every task of the array has ended. Run it from the project
# directory: bash path/to/submit.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for b in benchmarks/*/; do
	impactbench gen-scenarios "$(basename "$b")"
done
mkdir -p logs
# --parsable prints "jobid" or "jobid;cluster".
study=$(sbatch --parsable "$here/study.sbatch")
study=${study%%;*}
merge=$(sbatch --parsable --dependency=afterany:"$study" "$here/merge.sbatch")
merge=${merge%%;*}
echo "study: job array $study; merge: job $merge (starts when every task of $study has ended)"
echo "progress: impactbench status all"
