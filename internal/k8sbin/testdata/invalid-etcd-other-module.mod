// The go.mod of etcd's API module, not its server.
module go.etcd.io/etcd/api/v3

go 1.26.0
