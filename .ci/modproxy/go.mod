module github.com/lockplugin/lockplugin/ci/modproxy

go 1.22.0

require golang.org/x/mod v0.22.0
