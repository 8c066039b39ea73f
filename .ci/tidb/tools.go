//go:build tools

// Package tidb pins the tidb-server that .ci/run builds for the TiDB
// target of the conformance suites: github.com/pingcap/tidb at
// v1.1.0-beta.0.20241125141335-ec8b81b98edc (TiDB v8.4.0), with the replace
// lines of TiDB's own go.mod. Build it with
//
//	go build -o tidb-server github.com/pingcap/tidb/cmd/tidb-server
//
// from this directory; .ci/run does, when its cached binary is missing.
package tidb

import _ "github.com/pingcap/tidb/cmd/tidb-server"
