// Package pgtest runs a throw-away PostgreSQL server for tests: a cluster
// made by Debian's initdb in a temporary directory, served by a postgres
// process that listens on a Unix socket in that directory only (no TCP
// port, so nothing else on the machine can reach it and no port can be
// taken). Each test gets a database of its own in it.
//
// The server is a child of the test process and dies with it (the parent
// death signal), so a test binary that is killed leaves no server behind.
// Run as root (CI), initdb and postgres refuse to run; they then run as
// the "postgres" system user that Debian's postgresql package creates.
package pgtest

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
	mu   sync.Mutex
	cmd  *exec.Cmd     // guarded by mu
	done chan struct{} // closed when postgres has exited
	err  error         // postgres's exit, once done

	stopOnce sync.Once
	n        atomic.Int64 // databases created
}

// NotInstalledError says that PostgreSQL's server programs were not found.
type NotInstalledError struct{ Looked []string }

func (e *NotInstalledError) Error() string {
	return "pgtest: PostgreSQL's initdb and postgres were not found (looked in " + strings.Join(e.Looked, ", ") +
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
		return nil, fmt.Errorf("pgtest: %w", err)
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
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	c := &Cluster{dir: dir, done: make(chan struct{})}
	// The settings of a disposable server: no TCP, no durability (the
	// process under test may be killed, the server is not), and enough
	// connections for several server instances at once.
	args := []string{"-D", data, "-k", dir, "-p", strconv.Itoa(port), "-c", "listen_addresses=",
		"-c", "max_connections=300", "-c", "shared_buffers=128MB", "-c", "log_min_messages=warning"}
	if !o.Durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	ready := make(chan error, 1)
	go c.run(filepath.Join(bin, "postgres"), args, cred, ready)
	select {
	case err := <-ready:
		if err != nil {
			return nil, err
		}
	case <-ctx.Done():
		c.Stop()
		return nil, ctx.Err()
	}
	return c, nil
}

// run starts postgres and waits for it on a goroutine locked to its OS
// thread: the parent death signal is sent when the thread that started the
// child exits, and this thread exits only after postgres has.
func (c *Cluster) run(prog string, args []string, cred *syscall.Credential, ready chan<- error) {
	runtime.LockOSThread()
	defer close(c.done)
	cmd := exec.Command(prog, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		ready <- fmt.Errorf("pgtest: %w", err)
		return
	}
	if err := cmd.Start(); err != nil {
		ready <- fmt.Errorf("pgtest: start postgres: %w", err)
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
		ready <- fmt.Errorf("pgtest: postgres exited before accepting connections (%v):\n%s", c.err, log.String())
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
		return nil, fmt.Errorf("pgtest: running as root, and PostgreSQL refuses root: no postgres system user to run it as (%v); "+
			"Debian's postgresql package creates it (scripts/deps.sh)", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
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
		return "", fmt.Errorf("pgtest: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("pgtest: create database: %w", err)
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
		c.mu.Unlock()
		<-c.done
		var ee *exec.ExitError
		if c.err != nil && !errors.As(c.err, &ee) {
			err = c.err
		}
		err = errors.Join(err, os.RemoveAll(c.dir))
	})
	return err
}
