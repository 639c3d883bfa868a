// Package pgserver runs a throw-away PostgreSQL server: a cluster made by
// Debian's initdb in a temporary directory, served by a postgres process
// that listens on a Unix socket in that directory only (no TCP port, so
// nothing else on the machine can reach it and no port can be taken).
// Each caller gets a database of its own in it: the tests' PostgreSQL
// store (authserver/store/storetest) and the load runs of `make bench`
// (cmd/loadgen's -db postgres, with the default durability).
//
// The server is a child of the process that started it and dies with it
// (the parent death signal), so a test binary or a load run that is killed
// leaves no server behind. Run as root (CI), initdb and postgres refuse to
// run; they then run as the "postgres" system user that Debian's
// postgresql package creates.
package pgserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// Superuser is the cluster's superuser, trusted on the socket.
const Superuser = "miniapp"

// port only names the socket file (.s.PGSQL.<port>); nothing listens on TCP.
const port = 5432

// Cluster is a running temporary server.
type Cluster struct {
	dir  string // data directory and socket directory
	bin  string // the directory of PostgreSQL's programs
	args []string
	cred *syscall.Credential // nil: this process's user

	mu   sync.Mutex
	cmd  *exec.Cmd     // guarded by mu
	done chan struct{} // guarded by mu; closed when postgres has exited
	err  error         // postgres's exit, once done

	stopOnce sync.Once
	n        atomic.Int64 // databases created
}

// NotInstalledError says that PostgreSQL's server programs were not found.
type NotInstalledError struct{ Looked []string }

func (e *NotInstalledError) Error() string {
	return "pgserver: PostgreSQL's initdb and postgres were not found (looked in " + strings.Join(e.Looked, ", ") +
		"); scripts/deps.sh installs Debian's postgresql package, or run: apt-get install postgresql"
}

// binDir finds the directory holding initdb and postgres: $PATH, else
// Debian's /usr/lib/postgresql/<version>/bin (the newest version), which
// Debian does not put on $PATH.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			d = filepath.Dir(real)
		}
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", &NotInstalledError{Looked: []string{"$PATH", "/usr/lib/postgresql/*/bin"}}
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// Options tune StartWith.
type Options struct {
	// Durable keeps PostgreSQL's default durability (fsync, synchronous
	// commit, full-page writes), for benchmarks whose figures should be
	// those of a real deployment; tests leave it off.
	Durable bool
	// SyncCommit keeps synchronous commit without fsync: a commit returns
	// once its WAL is written to the operating system, so that a crash of
	// the server (Crash), though not of the machine, keeps every
	// transaction that committed synchronously and may lose those that
	// did not. For tests of what survives a crash of PostgreSQL.
	SyncCommit bool
}

// Start creates a cluster in a new temporary directory and starts its
// server; it returns once the server accepts connections.
func Start(ctx context.Context) (*Cluster, error) { return StartWith(ctx, Options{}) }

// StartWith is Start with options.
func StartWith(ctx context.Context, o Options) (_ *Cluster, err error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	// A short path: a Unix socket's path is limited to 107 bytes.
	dir, err := os.MkdirTemp("", "mh-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgserver: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	cred, err := serverUser(dir)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", Superuser, "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgserver: initdb: %w\n%s", err, out)
	}
	// The settings of a disposable server: no TCP, no durability (the
	// process under test may be killed, the server is not), and enough
	// connections for several server instances at once.
	args := []string{"-D", data, "-k", dir, "-p", strconv.Itoa(port), "-c", "listen_addresses=",
		"-c", "max_connections=300", "-c", "shared_buffers=128MB", "-c", "log_min_messages=warning"}
	switch {
	case o.Durable:
	case o.SyncCommit:
		args = append(args, "-c", "fsync=off", "-c", "full_page_writes=off")
	default:
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	c := &Cluster{dir: dir, bin: bin, args: args, cred: cred}
	if err := c.serve(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// serve starts postgres and returns once it accepts connections.
func (c *Cluster) serve(ctx context.Context) error {
	done := make(chan struct{})
	c.mu.Lock()
	c.done = done
	c.mu.Unlock()
	ready := make(chan error, 1)
	go c.run(filepath.Join(c.bin, "postgres"), c.args, c.cred, done, ready)
	select {
	case err := <-ready:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Crash stops the server as a crash would, with pg_ctl stop -m immediate:
// its processes quit at once, without a checkpoint or flushing what they
// hold in memory, and the next start recovers from the WAL. It returns once
// the server has exited.
func (c *Cluster) Crash() error {
	stop := exec.Command(filepath.Join(c.bin, "pg_ctl"), "stop", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-s")
	stop.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if out, err := stop.CombinedOutput(); err != nil {
		return fmt.Errorf("pgserver: pg_ctl stop -m immediate: %w\n%s", err, out)
	}
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	<-done
	return nil
}

// Pid is the process id of the running server (postgres, the postmaster),
// or 0. Its backends and workers are its children; the CPU of those that
// exited counts in its children's time (/proc/PID/stat).
func (c *Cluster) Pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil || c.cmd.Process == nil || !c.running() {
		return 0
	}
	return c.cmd.Process.Pid
}

// running is Running with c.mu held.
func (c *Cluster) running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// Running reports whether the server is running (not crashed or stopped).
func (c *Cluster) Running() bool {
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Restart starts the server again after Crash, on the same data and
// socket; it returns once the server, having recovered, accepts
// connections.
func (c *Cluster) Restart(ctx context.Context) error {
	if c.Running() {
		return errors.New("pgserver: Restart: the server is still running (Crash it first)")
	}
	return c.serve(ctx)
}

// run starts postgres and waits for it on a goroutine locked to its OS
// thread: the parent death signal is sent when the thread that started the
// child exits, and this thread exits only after postgres has.
func (c *Cluster) run(prog string, args []string, cred *syscall.Credential, done chan struct{}, ready chan<- error) {
	runtime.LockOSThread()
	defer close(done)
	cmd := exec.Command(prog, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		ready <- fmt.Errorf("pgserver: %w", err)
		return
	}
	if err := cmd.Start(); err != nil {
		ready <- fmt.Errorf("pgserver: start postgres: %w", err)
		return
	}
	c.mu.Lock()
	c.cmd = cmd
	c.mu.Unlock()
	// The server says when it accepts connections; until then its log is
	// kept to explain a failure.
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	signalled := false
	for sc.Scan() {
		line := sc.Text()
		if !signalled {
			log.WriteString(line + "\n")
			if strings.Contains(line, "database system is ready to accept connections") {
				signalled = true
				ready <- nil
			}
		}
	}
	io.Copy(io.Discard, stderr)
	c.err = cmd.Wait()
	if !signalled {
		ready <- fmt.Errorf("pgserver: postgres exited before accepting connections (%v):\n%s", c.err, log.String())
	}
}

// serverUser returns the credential initdb and postgres run with: none
// (this process's) unless this process is root, which they refuse; then
// the postgres system user, which is given dir.
func serverUser(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgserver: running as root, and PostgreSQL refuses root: no postgres system user to run it as (%v); "+
			"Debian's postgresql package creates it (scripts/deps.sh)", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, fmt.Errorf("pgserver: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// DSN returns the connection string of database name on this server.
func (c *Cluster) DSN(name string) string {
	return fmt.Sprintf("postgres://%s@/%s?host=%s&port=%d&sslmode=disable", Superuser, name, c.dir, port)
}

// NewDatabase creates an empty database and returns its connection string.
func (c *Cluster) NewDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d", c.n.Add(1))
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgserver: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("pgserver: create database: %w", err)
	}
	return c.DSN(name), nil
}

// Stop shuts the server down at once and removes its directory.
func (c *Cluster) Stop() error {
	var err error
	c.stopOnce.Do(func() {
		c.mu.Lock()
		if c.cmd != nil {
			// SIGQUIT: immediate shutdown; the data is thrown away.
			c.cmd.Process.Signal(syscall.SIGQUIT)
		}
		done := c.done
		c.mu.Unlock()
		if done != nil {
			<-done
		}
		var ee *exec.ExitError
		if c.err != nil && !errors.As(c.err, &ee) {
			err = c.err
		}
		err = errors.Join(err, os.RemoveAll(c.dir))
	})
	return err
}
