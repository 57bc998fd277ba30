module github.com/gregor-io/gregor/compat-tests/bench/tcpfile

go 1.24
