//go:build unix

package privatefile

import "syscall"

// noFollow refuses to open a symbolic link (open(2), O_NOFOLLOW).
const noFollow = syscall.O_NOFOLLOW
