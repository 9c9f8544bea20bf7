# function_graph with funcgraph-tail: every closing brace names its function.
put set_graph_function do_sys_openat2
put current_tracer function_graph
put options/funcgraph-tail 1
FTCAT_FILE_OPTS="-O funcgraph-tail" three_readers
put options/funcgraph-tail 0
put current_tracer nop
: >$T/set_graph_function
