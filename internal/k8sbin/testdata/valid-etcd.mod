// A trimmed go.etcd.io/etcd/server/v3 go.mod in the shape of v3.6.16's: a
// toolchain line (which must not be copied) and replacements into etcd's
// own repository.
module go.etcd.io/etcd/server/v3

go 1.26.0

toolchain go1.26.10

require (
	go.etcd.io/etcd/api/v3 v3.6.16
	go.etcd.io/etcd/client/v3 v3.6.16
)

replace (
	go.etcd.io/etcd/api/v3 => ../api
	go.etcd.io/etcd/client/v3 => ../client/v3
)

replace go.etcd.io/etcd => ./FORBIDDEN_DEPENDENCY
