//go:build cgo

package fakecuda

const cgoEnabled = true
