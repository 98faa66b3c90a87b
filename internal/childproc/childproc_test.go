package childproc

import (
	"os/exec"
	"syscall"
	"testing"
)

// TestStart: the child gets SIGKILL as its parent-death signal, the rest
// of its SysProcAttr kept; a program that cannot start is an error with
// no thread held.
func TestStart(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "exit 3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	release, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	release()
	release() // twice is allowed
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("wait: %v, want exit status 3", err)
	}
	if a := cmd.SysProcAttr; a.Pdeathsig != syscall.SIGKILL || !a.Setpgid {
		t.Errorf("SysProcAttr %+v: want Pdeathsig SIGKILL and Setpgid kept", a)
	}
	if err := Run(exec.Command("/nonexistent/program")); err == nil {
		t.Error("a program that does not exist: no error")
	}
	if err := Run(exec.Command("/bin/true")); err != nil {
		t.Error(err)
	}
}
