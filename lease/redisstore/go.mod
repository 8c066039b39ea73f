module github.com/lockplugin/lockplugin/lease/redisstore

go 1.22.0

require (
	github.com/lockplugin/lockplugin v0.0.0
	github.com/redis/go-redis/v9 v9.17.3
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/gofrs/flock v0.12.1 // indirect
	golang.org/x/sys v0.22.0 // indirect
)

replace github.com/lockplugin/lockplugin => ../../
