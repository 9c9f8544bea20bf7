# A bench-sized function recording (not in `all`; `-s bench` runs it with
# bench-fg): the function tracer on vfs_* and two functions every read and
# write passes (a small filter: giant globs soft-lock 6.1 under TCG), under
# the bench workload, for scripts/bench-decode.sh.
bench_record func -p function -l 'vfs_*' -l rw_verify_area -l security_file_permission
