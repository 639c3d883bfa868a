// Package privatefile writes the files the host leaves for its user (the
// automation channel's address and token, a window's remembered size, a
// JUnit report): readable by their owner only, written whole or not at
// all, and never through a symbolic link.
//
// A file is written to a fresh temporary file in the same folder, created
// with O_EXCL and O_NOFOLLOW and mode 0600, then renamed over the path.
// rename(2) replaces a name and never follows it, so a link planted at the
// path (or at the temporary name) cannot make the host write, truncate or
// change the mode of the file it points to; a path that is a symbolic link
// is refused with an error that says so, rather than silently replaced.
package privatefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Mode is the mode of every file Write leaves: the owner's only.
const Mode fs.FileMode = 0o600

// ErrSymlink is returned for a path that is a symbolic link.
var ErrSymlink = errors.New("is a symbolic link; the host writes no file through a link (remove the link or name another path)")

// Write replaces the file at path with data, mode 0600. The folder must
// exist. On an error the file at path is as it was.
func Write(path string, data []byte) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("privatefile: %s %w", path, ErrSymlink)
	} else if err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("privatefile: %s is not a regular file (%s); name a file", path, fi.Mode().Type())
	}
	tmp, f, err := create(path)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if werr == nil {
		// The umask may have cleared owner bits of the creation mode.
		werr = f.Chmod(Mode)
	}
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("privatefile: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("privatefile: %w", err)
	}
	return nil
}

// create makes a fresh temporary file beside path, never through a link.
func create(path string) (string, *os.File, error) {
	dir, base := filepath.Split(path)
	for range 16 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		tmp := filepath.Join(dir, "."+base+"."+hex.EncodeToString(b[:])+".tmp")
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, Mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("privatefile: %w", err)
		}
		return tmp, f, nil
	}
	return "", nil, fmt.Errorf("privatefile: no fresh temporary name beside %s", path)
}

// Read returns the file at path, at most max bytes, never through a
// symbolic link (O_NOFOLLOW): a link planted there is refused as Write
// refuses it, so what the host reads is a file its user wrote.
func Read(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("privatefile: %s %w", path, ErrSymlink)
		}
		return nil, fmt.Errorf("privatefile: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("privatefile: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("privatefile: %s is not a regular file (%s); name a file", path, fi.Mode().Type())
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("privatefile: %s is %d bytes, more than the %d it may have", path, fi.Size(), max)
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("privatefile: reading %s: %w", path, err)
	}
	return b, nil
}
