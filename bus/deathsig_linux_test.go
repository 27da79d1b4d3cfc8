package bus

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the child process die with the test binary, so a
// test killed by its timeout leaves no nats-server or stint behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
