// Package docs holds the tests that keep the documentation (README.md,
// CONTRIBUTING.md and docs/*.md) in step with the code: every Go block of
// it and of the package docs compiles, the README's first program prints
// what the README says, and the per-database matrices of docs/databases.md
// are generated from the capability data in dialects, so a test fails when
// they drift apart.
//
// To regenerate the generated blocks after changing dialects:
//
//	cd tests && go test ./docs -update
package docs
