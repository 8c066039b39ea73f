// Package docs holds the tests that keep README.md in step with the code:
// the per-database matrices in the README are generated from the
// capability data in dialects, and a test fails when they drift apart.
//
// To regenerate the README's generated blocks after changing dialects:
//
//	cd tests && go test ./docs -update
package docs
