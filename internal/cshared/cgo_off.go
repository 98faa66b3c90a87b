//go:build !cgo

package cshared

const cgoEnabled = false
