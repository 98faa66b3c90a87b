// Package childproc starts child processes that die with this one.
//
// probe run's children, probe exec's program and probe decode --runs'
// runs must not outlive the probe, even when it is killed by SIGKILL,
// which it cannot catch to clean up. Linux's parent-death signal
// (prctl(2) PR_SET_PDEATHSIG, syscall.SysProcAttr.Pdeathsig) does that,
// with one catch: it fires when the thread that forked the child exits,
// not when the process does (go.dev/issue/27505). The Go runtime ends a
// thread when a goroutine locked to it returns without unlocking, and any
// goroutine could come to run on the thread that forked and do that: the
// child would be killed in the middle of its work. Start forks from a
// goroutine locked to its thread and keeps that thread parked, running
// nothing else, until the child has been reaped.
package childproc

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Start starts cmd with SIGKILL as its parent-death signal (keeping the
// rest of cmd.SysProcAttr) from a thread held until release is called:
// call it once cmd has been waited for. release may be called more than
// once.
func Start(cmd *exec.Cmd) (release func(), err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	started := make(chan error)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		// Unlocked, not ended with the goroutine: once the child is
		// reaped (or never started) the thread may serve others again.
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			<-done
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }, nil
}

// Run is Start, then cmd.Wait, then release.
func Run(cmd *exec.Cmd) error {
	release, err := Start(cmd)
	if err != nil {
		return err
	}
	defer release()
	return cmd.Wait()
}
