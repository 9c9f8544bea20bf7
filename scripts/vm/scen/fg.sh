# function_graph limited to the subtree of do_sys_openat2 (set the plain way),
# read by the three readers.
put set_graph_function do_sys_openat2
put current_tracer function_graph
three_readers
put current_tracer nop
: >$T/set_graph_function
