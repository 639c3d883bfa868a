//go:build !unix

package host

import "io"

// keepFromChildren does nothing here: a process inherits only the handles
// it is given.
func keepFromChildren(io.Writer) {}
