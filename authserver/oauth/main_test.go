package oauth

import (
	"os"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// TestMain runs the tests on the store MINIAPP_HOST_TEST_STORE names
// (storetest), and stops the test PostgreSQL server after them.
func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }
