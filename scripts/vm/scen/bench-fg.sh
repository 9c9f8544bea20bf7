# A bench-sized function_graph recording (not in `all`; `-s bench` runs it
# with bench-func): the graphs of the read, write and open syscalls' VFS
# entry points under the bench workload, for scripts/bench-decode.sh.
bench_record fg -p function_graph -g vfs_read -g vfs_write -g do_sys_openat2
