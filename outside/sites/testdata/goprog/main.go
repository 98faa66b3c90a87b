// goprog: a Go program with cgo (so its runtime maps memory through the
// C library's mmap, which the library wraps): 8 MiB malloc'd by C (sampled at any rate up to 1 MiB), kept,
// and 64 MiB of Go slices, kept. It returns from main: the Go runtime
// exits by the system call, without the C library's exit.
package main

/*
#include <stdlib.h>
static void *cmalloc(size_t n) { return malloc(n); }
*/
import "C"

import "fmt"

var keep [][]byte

func main() {
	p := C.cmalloc(8 << 20)
	_ = p
	for i := 0; i < 64; i++ {
		keep = append(keep, make([]byte, 1<<20))
	}
	fmt.Println("ok", len(keep))
}
