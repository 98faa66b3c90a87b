package osthread

import (
	"slices"
	"sync"
)

// Stack is where one live thread from Start has its stack: [Lo, Hi) is the
// usable stack (pthread_attr_getstack), GuardBytes the guard area directly
// below Lo. Addresses are the thread's own, so a reader of
// /proc/self/smaps can find the mapping that holds each stack.
type Stack struct {
	Lo, Hi     uintptr
	GuardBytes int64
}

// registry holds the stacks of the threads that are running fn now.
var registry struct {
	sync.Mutex
	live map[*Thread]Stack
}

func register(t *Thread, s Stack) {
	registry.Lock()
	defer registry.Unlock()
	if registry.live == nil {
		registry.live = map[*Thread]Stack{}
	}
	registry.live[t] = s
}

func unregister(t *Thread) {
	registry.Lock()
	defer registry.Unlock()
	delete(registry.live, t)
}

// EachStack calls fn with the stack of every thread from Start whose
// function is running, in no particular order, holding the registry's lock
// (fn must not start or join threads). It allocates nothing itself, so a
// probe that lists stacks between steps is charged for its own slice.
func EachStack(fn func(Stack)) {
	registry.Lock()
	defer registry.Unlock()
	for _, s := range registry.live {
		fn(s)
	}
}

// Stacks lists the stacks of every thread from Start whose function is
// running, lowest address first; never nil. Without cgo it is empty. A
// thread leaves the list when its function returns, before the thread
// exits; the C library may keep the exited thread's stack mapped for reuse.
func Stacks() []Stack {
	var out []Stack
	EachStack(func(s Stack) { out = append(out, s) })
	if out == nil {
		out = []Stack{}
	}
	slices.SortFunc(out, func(a, b Stack) int {
		switch {
		case a.Lo < b.Lo:
			return -1
		case a.Lo > b.Lo:
			return 1
		}
		return 0
	})
	return out
}
