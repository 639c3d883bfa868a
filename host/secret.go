package host

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// HostSecretEnv is the environment variable `open` and `playground` read
// the host's secret from (the native-consent API's client secret).
const HostSecretEnv = "MINIAPP_HOST_SECRET"

// SecretEnv are the environment variables that may carry a secret of the
// host's user: the host's secret, the dashboard keys (MINIAPP_HOST_KEY,
// MINIAPP_HOST_OPERATOR_KEY) and a database URL, which may hold a password
// (MINIAPP_HOST_DB).
// TakeSecretEnv removes them all before a window exists: WebKit's web and
// network processes inherit the environment of the process that starts
// them, and a process's environment can be read in /proc/PID/environ by
// anything running as the same user (docs/host.md, "Secrets").
var SecretEnv = []string{HostSecretEnv, "MINIAPP_HOST_KEY", "MINIAPP_HOST_OPERATOR_KEY", "MINIAPP_HOST_DB"}

// TakeSecretEnv returns the values of SecretEnv and removes those
// variables from the process's environment. os.Unsetenv also removes them
// from the C library's environ when the program uses cgo (as the WebKitGTK
// engine does), which is the environment WebKit's processes are started
// with. It must run before the engine starts any process.
func TakeSecretEnv() (map[string]string, error) {
	vals := map[string]string{}
	for _, name := range SecretEnv {
		if v, ok := os.LookupEnv(name); ok {
			vals[name] = v
		}
		if err := os.Unsetenv(name); err != nil {
			return nil, fmt.Errorf("host: remove %s from the environment: %w", name, err)
		}
	}
	return vals, nil
}

// maxSecret bounds what ReadSecret reads: a secret is a few dozen bytes.
const maxSecret = 4096

// ReadSecret reads a secret from r (a pipe the starting program writes the
// secret to and closes: `open --secret-fd`) to its end, without one final
// newline, and closes r.
func ReadSecret(r io.ReadCloser) (string, error) {
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxSecret+1))
	if err != nil {
		return "", fmt.Errorf("host: read the secret: %w", err)
	}
	if len(b) > maxSecret {
		return "", fmt.Errorf("host: read the secret: longer than %d bytes", maxSecret)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) == 0 {
		return "", errors.New("host: read the secret: it is empty; the program that started the host must write it and close the pipe")
	}
	return string(b), nil
}
