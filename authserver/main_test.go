package authserver_test

import (
	"os"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// TestMain stops the temporary PostgreSQL server of the tests that run
// several instances on one database (storetest.Postgres), if one started.
// With AUTHSERVER_TEST_INSTANCE set, the binary is instead an instance
// that a test runs in a process of its own (runChild).
func TestMain(m *testing.M) {
	if c := os.Getenv(childEnv); c != "" {
		os.Exit(runChild(c))
	}
	os.Exit(storetest.Main(m))
}
