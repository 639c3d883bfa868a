package authserver_test

import (
	"os"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// TestMain runs the tests on the store MINIAPP_HOST_TEST_STORE names
// (storetest), and stops the test PostgreSQL server after them. With
// AUTHSERVER_TEST_INSTANCE set, the binary is instead an instance that a
// test runs in a process of its own (runChild).
func TestMain(m *testing.M) {
	if c := os.Getenv(childEnv); c != "" {
		os.Exit(runChild(c))
	}
	os.Exit(storetest.Main(m))
}
