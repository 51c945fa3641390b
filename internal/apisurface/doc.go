// Package apisurface holds no code: its test lists the exported identifiers of every package
// of the module and compares them with the lists checked in under testdata, one file per
// package, so that a change to what a package exports is a decision a reviewer sees in the
// diff rather than growth nobody chose (Go's own api/ files and many modules' API goldens do
// the same).
//
// After adding, renaming or removing an exported identifier on purpose, and after a merge
// that conflicts in testdata, regenerate the lists and commit them with the change:
//
//	go test ./internal/apisurface -update
package apisurface
