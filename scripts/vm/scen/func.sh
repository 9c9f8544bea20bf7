# The function tracer on vfs_* (a small glob: giant ones soft-lock 6.1 under TCG).
put set_ftrace_filter 'vfs_*'
put current_tracer function
three_readers
put current_tracer nop
: >$T/set_ftrace_filter
