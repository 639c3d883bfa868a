//go:build !unix

package store

import (
	"errors"
	"os"
)

// tryLock is not implemented here: the database is opened unguarded.
func tryLock(*os.File) error { return errors.ErrUnsupported }
