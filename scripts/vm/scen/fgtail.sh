# function_graph with funcgraph-tail: every closing brace names its function.
put set_graph_function do_sys_openat2
put current_tracer function_graph
put options/funcgraph-tail 1
FTCAT_FILE_OPTS="-O funcgraph-tail" three_readers
# trace-cmd's own way to show the tails, on both files.
for f in ext tc; do
    run $f.report-tail trace-cmd report -O fgraph:tailprint -i $f.dat
    run $f.tcstyle-tail ftcat --style trace-cmd-3.1 -O fgraph:tailprint $f.dat
    same "ftcat --style trace-cmd-3.1 -O fgraph:tailprint vs trace-cmd report -O fgraph:tailprint ($f)" $f.report-tail $f.tcstyle-tail
done
put options/funcgraph-tail 0
put current_tracer nop
: >$T/set_graph_function
