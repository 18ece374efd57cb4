#!/bin/sh
# bench/baselines.sh — STI versus Chib's method (and, with -ais N, annealed importance sampling as a
# reference) on the ICASSP 2016 synthetic NMF workload: I=100, J=75, exponential priors of rate 5,
# one dataset per true rank (3 and 6), candidate ranks 1..10. Prints, per dataset and rank, every
# estimate of log p(X | R) with its standard error, wall and CPU time, then the totals and the
# Chib/STI time ratios (plain, and at equal standard error). See bench/baselines/main.go.
#
# Usage, from anywhere in the repository:
#   bench/baselines.sh                 # STI and Chib, about 3-4 minutes on 2 cores
#   bench/baselines.sh -ais 4          # plus 4 AIS runs per rank (about twice as long)
#   bench/baselines.sh -chib paper     # Chib with the paper's two-block recipe
#   bench/baselines.sh -truth 6 -ranks 4-8 -replicas 4
# Other engines running on the machine inflate wall times; compare the CPU-time columns.
set -eu
cd "$(dirname "$0")/.."
exec go run ./bench/baselines "$@"
